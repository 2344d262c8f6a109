// The networking part of the kernel command line Talos reads: `talos.hostname=`,
// `talos.network.interface.ignore=` (repeatable) and `ip=<dev>:dhcp` / `ip=dhcp`
// forms. Static `ip=` configurations, `bond=` and `vlan=` arrive with the full
// networkd; they are reported as unsupported so the caller can log them.

import { cmdlineArgs } from "../sys/cmdline.js";

export interface CmdlineNetworking {
  hostname?: string;
  domainname?: string;
  ignoreLinks: string[];
  /** Links `ip=<dev>:dhcp` names. */
  dhcpLinks: string[];
  /** Arguments seen but not handled yet. */
  unsupported: string[];
}

export { cmdlineArgs };

export function parseCmdlineNetworking(text: string): CmdlineNetworking {
  const res: CmdlineNetworking = { ignoreLinks: [], dhcpLinks: [], unsupported: [] };
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
        const parts = value.split(":");
        if (value === "dhcp") break; // Talos ignores the bare form: DHCP runs by default anyway.
        if (parts.length === 2 && parts[1] === "dhcp" && parts[0]) res.dhcpLinks.push(parts[0]);
        else res.unsupported.push(`ip=${value}`);
        break;
      }
      case "bond":
      case "vlan":
        res.unsupported.push(`${key}=${value}`);
        break;
    }
  }
  return res;
}
