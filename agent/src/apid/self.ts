import net from "node:net";
import os from "node:os";

/** What this node is called, as machined publishes it (HostnameStatus, NodeAddresses). */
export interface NodeNames {
  hostname?: string;
  domainname?: string;
  /** Addresses, with or without a /prefix. */
  addresses?: string[];
}

/** An IP in one spelling (IPv6 compressed, lower case); other names lower-cased. */
export function canonicalHost(host: string): string {
  const h = host.toLowerCase();
  if (net.isIPv6(h)) return new URL(`http://[${h}]/`).hostname.slice(1, -1);
  return h;
}

/** The host a `node`/`nodes` target names (the director refuses one naming a port): brackets removed, canonical spelling. */
export function targetHost(target: string): string {
  const t = target.trim();
  const bracketed = /^\[([^\]]+)\]$/.exec(t);
  return canonicalHost(bracketed ? bracketed[1]! : t);
}

/**
 * Decides whether a `node`/`nodes` target names this node: any of its addresses
 * (published or on its interfaces, including the one apid listens on), its
 * hostname or FQDN.
 */
export class SelfNames {
  private names = new Set<string>();
  private published: NodeNames = {};

  constructor(private readonly listenHost = "") {
    this.rebuild();
  }

  update(names: NodeNames): void {
    this.published = { ...this.published, ...names };
    this.rebuild();
  }

  isSelf(target: string): boolean {
    const host = targetHost(target);
    if (this.names.has(host)) return true;
    // Interfaces change (DHCP, the sandbox's namespace): look again for addresses.
    return net.isIP(host) !== 0 && interfaceAddresses().includes(host);
  }

  private rebuild(): void {
    const { hostname, domainname, addresses = [] } = this.published;
    const out = new Set<string>(["localhost", "127.0.0.1", "::1"]);
    const host = (hostname || os.hostname()).toLowerCase();
    out.add(host);
    if (domainname) out.add(`${host}.${domainname.toLowerCase()}`);
    for (const a of addresses) out.add(canonicalHost(a.replace(/\/\d+$/, "")));
    if (this.listenHost && !["0.0.0.0", "::", ""].includes(this.listenHost)) out.add(canonicalHost(this.listenHost));
    this.names = out;
  }
}

function interfaceAddresses(): string[] {
  return Object.values(os.networkInterfaces()).flatMap((as) => (as ?? []).map((a) => canonicalHost(a.address)));
}

/** Addresses of a NodeAddressSpec as decoded from its proto (`common.NetIPPrefix` bytes). */
export function addressesFromProto(wire: unknown): string[] {
  // The decoder yields plain objects; NetIPPrefix's shape is fixed by common.proto.
  const list = Array.isArray(wire) ? (wire as { ip?: Uint8Array }[]) : [];
  const out: string[] = [];
  for (const p of list) {
    const ip = p.ip ? Buffer.from(p.ip) : Buffer.alloc(0);
    if (ip.length === 4) out.push([...ip].join("."));
    else if (ip.length === 16)
      out.push(canonicalHost(Array.from({ length: 8 }, (_, i) => ip.readUInt16BE(i * 2).toString(16)).join(":")));
  }
  return out;
}
