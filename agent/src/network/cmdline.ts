// The networking part of the kernel command line Talos reads: `talos.hostname=`,
// `talos.network.interface.ignore=` (repeatable), `ip=` in the kernel's full syntax
// (<client>:<server>:<gw>:<netmask>:<hostname>:<device>:<autoconf>:<dns0>:<dns1>:<ntp0>,
// `ip=<dev>:dhcp`; bare `ip=dhcp` is ignored as Talos does), `vlan=<name>:<parent>`
// and `net.ifnames=0`. `bond=` is reported as unsupported so the caller can log it.

import { cmdlineArgs } from "../sys/cmdline.js";

export interface CmdlineNetworking {
  hostname?: string;
  domainname?: string;
  ignoreLinks: string[];
  /** Links `ip=<dev>:dhcp` (or autoconf dhcp) names. */
  dhcpLinks: string[];
  /** Static `ip=` configurations; `device` "" means the first non-loopback link by name. */
  static: CmdlineStaticIp[];
  dnsServers: string[];
  timeServers: string[];
  /** `vlan=<name>:<parent>`: the id is the number after the last dot of the name. */
  vlans: { name: string; parent: string; vlanId: number }[];
  /** `net.ifnames=0`: the kernel's own ethN names are kept. */
  netIfnames0: boolean;
  /** Arguments seen but not handled yet. */
  unsupported: string[];
}

export interface CmdlineStaticIp {
  device: string;
  /** "" when only other fields (gateway) were given. */
  address: string;
  prefixLen: number;
  gateway: string;
}

export { cmdlineArgs };

/** Dotted netmask or prefix length -> prefix length. */
function maskLength(text: string): number | undefined {
  if (/^\d{1,3}$/.test(text)) return Number(text);
  const words = text.split(".");
  if (words.length !== 4) return undefined;
  const bits = words.map((w) => Number(w).toString(2).padStart(8, "0")).join("");
  return /^1*0*$/.test(bits) ? bits.indexOf("0") < 0 ? 32 : bits.indexOf("0") : undefined;
}

/** Splits an ip= value at colons outside [IPv6] brackets. */
function ipFields(value: string): string[] {
  const out: string[] = [];
  let cur = "";
  let depth = 0;
  for (const ch of value) {
    if (ch === "[") depth++;
    else if (ch === "]") depth--;
    else if (ch === ":" && depth === 0) {
      out.push(cur);
      cur = "";
      continue;
    }
    if (ch !== "[" && ch !== "]") cur += ch;
  }
  out.push(cur);
  return out;
}

export function parseCmdlineNetworking(text: string): CmdlineNetworking {
  const res: CmdlineNetworking = { ignoreLinks: [], dhcpLinks: [], static: [], dnsServers: [], timeServers: [], vlans: [], netIfnames0: false, unsupported: [] };
  let ipHostname: string | undefined;
  for (const [key, value] of cmdlineArgs(text)) {
    if (value === undefined) continue;
    switch (key) {
      case "talos.hostname": {
        const dot = value.indexOf(".");
        res.hostname = dot > 0 ? value.slice(0, dot) : value;
        if (dot > 0) res.domainname = value.slice(dot + 1);
        break;
      }
      case "talos.network.interface.ignore":
        res.ignoreLinks.push(value);
        break;
      case "ip": {
        const f = ipFields(value);
        if (value === "dhcp") break; // Talos ignores the bare form: DHCP runs by default anyway.
        if (f.length === 2 && f[1] === "dhcp" && f[0]) {
          res.dhcpLinks.push(f[0]);
          break;
        }
        const client = f[0] ?? "";
        const family = client.includes(":") ? 6 : 4;
        const full = family === 4 ? 32 : 128;
        const len = f[3] ? maskLength(f[3]) : full;
        if (len === undefined) {
          res.unsupported.push(`ip=${value}`);
          break;
        }
        if (f[4] && ipHostname === undefined) ipHostname = f[4];
        const device = f[5] ?? "";
        if (f[6] === "dhcp" && device) res.dhcpLinks.push(device);
        for (const dns of [f[7], f[8]]) if (dns) res.dnsServers.push(dns);
        if (f[9]) res.timeServers.push(f[9]);
        res.static.push({ device, address: client, prefixLen: client ? len : 0, gateway: f[2] ?? "" });
        break;
      }
      case "vlan": {
        const [name, parent] = value.split(":");
        const id = Number(name?.slice(name.lastIndexOf(".") + 1));
        if (name && parent && Number.isInteger(id) && id >= 1 && id <= 4094) res.vlans.push({ name, parent, vlanId: id });
        else res.unsupported.push(`vlan=${value}`);
        break;
      }
      case "net.ifnames":
        res.netIfnames0 = value === "0";
        break;
      case "bond":
        res.unsupported.push(`${key}=${value}`);
        break;
    }
  }
  // talos.hostname= wins over the hostname field of ip=.
  if (res.hostname === undefined && ipHostname) {
    const dot = ipHostname.indexOf(".");
    res.hostname = dot > 0 ? ipHostname.slice(0, dot) : ipHostname;
    if (dot > 0) res.domainname = ipHostname.slice(dot + 1);
  }
  return res;
}
