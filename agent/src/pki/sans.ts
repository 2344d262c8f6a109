import { isIP } from "node:net";

/** Splits SANs into DNS names and IP addresses (as Talos does for certSANs). */
export function splitSANs(sans: readonly string[]): { dnsNames: string[]; ipAddresses: string[] } {
  const dnsNames: string[] = [];
  const ipAddresses: string[] = [];
  for (const san of sans) {
    if (san === "") continue;
    if (isIP(san) !== 0) ipAddresses.push(san);
    else dnsNames.push(san);
  }
  return { dnsNames, ipAddresses };
}
