// nocloud's network-config itself is read by network/nocloud-network.ts.

/** A platform hostname as Talos's ParseFQDN splits it. */
export function splitFqdn(fqdn: string): { hostname: string; domainname: string } {
  const dot = fqdn.indexOf(".");
  return dot < 0
    ? { hostname: fqdn, domainname: "" }
    : { hostname: fqdn.slice(0, dot), domainname: fqdn.slice(dot + 1) };
}
