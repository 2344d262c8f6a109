// What of a nocloud network-config (v1 or v2) today's network layer can take: the DNS
// servers, at the platform layer (addresses, routes and links wait for networkd's specs).

import { isIP } from "node:net";
import { parse } from "yaml";
import { InvalidInputError } from "../../errors.js";

type Doc = Record<string, unknown>;
const isDoc = (v: unknown): v is Doc => typeof v === "object" && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

function checked(addresses: string[]): string[] {
  for (const a of addresses) if (isIP(a) === 0) throw new InvalidInputError(`network-config: ${JSON.stringify(a)} is not an IP address`, { address: a });
  return addresses;
}

/** The DNS servers a network-config names: v1's `nameserver` entries, v2's ethernets' and bonds' nameservers. */
export function nocloudDnsServers(text: string | undefined): string[] {
  if (text === undefined || text.trim() === "") return [];
  const raw: unknown = parse(text);
  // cloud-init accepts the document with or without a top-level `network:` key.
  const doc = isDoc(raw) && isDoc(raw["network"]) ? raw["network"] : raw;
  if (!isDoc(doc)) throw new InvalidInputError("network-config is not a YAML mapping");
  const version = doc["version"];
  if (version === 1) {
    const entries = Array.isArray(doc["config"]) ? doc["config"].filter(isDoc) : [];
    return checked(entries.filter((e) => e["type"] === "nameserver").flatMap((e) => strings(e["address"])));
  }
  if (version === 2) {
    const sections = [doc["ethernets"], doc["bonds"]].filter(isDoc);
    return checked(sections.flatMap((s) => Object.values(s).filter(isDoc)).flatMap((e) => (isDoc(e["nameservers"]) ? strings(e["nameservers"]["addresses"]) : [])));
  }
  throw new InvalidInputError(`network-config metadata version=${String(version)} is not supported`, { version });
}

/** A platform hostname as Talos's ParseFQDN splits it. */
export function splitFqdn(fqdn: string): { hostname: string; domainname: string } {
  const dot = fqdn.indexOf(".");
  return dot < 0 ? { hostname: fqdn, domainname: "" } : { hostname: fqdn.slice(0, dot), domainname: fqdn.slice(dot + 1) };
}
