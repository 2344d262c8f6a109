// The networking part of the kernel command line Talos reads: `talos.hostname=`,
// `talos.network.interface.ignore=` (repeatable), `ip=` in the kernel's full syntax
// (<client>:<server>:<gw>:<netmask>:<hostname>:<device>:<autoconf>:<dns0>:<dns1>:<ntp0>,
// `ip=<dev>:dhcp`; bare `ip=dhcp` is ignored as Talos does), `vlan=<name>:<parent>`,
// dracut's `bond=<name>[:<members>[:<options>[:<mtu>]]]`. `net.ifnames=0` is udevd's to read
// (it then keeps the kernel's link names), as on Talos, whose networking ignores it too.

import type { Bond } from "../config/types/v1alpha1.js";
import { bondNames } from "../resources/catalog/network.js";
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
  /** `bond=`: members default to eth0,eth1 (dracut); options in the machine config's Bond shape. */
  bond?: { name: string; members: string[]; options: Bond; mtu: number };
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
  return /^1*0*$/.test(bits) ? (bits.indexOf("0") < 0 ? 32 : bits.indexOf("0")) : undefined;
}

// modinfo bonding's option names -> the machine config's Bond keys (Talos's parseBondOptions).
const bondStringOptions: Record<string, keyof Bond> = {
  mode: "mode",
  xmit_hash_policy: "xmitHashPolicy",
  lacp_rate: "lacpRate",
  arp_validate: "arpValidate",
  arp_all_targets: "arpAllTargets",
  primary: "primary",
  primary_reselect: "primaryReselect",
  fail_over_mac: "failOverMac",
  ad_select: "adSelect",
};
const bondNumberOptions: Record<string, keyof Bond> = {
  miimon: "miimon",
  updelay: "updelay",
  downdelay: "downdelay",
  arp_interval: "arpInterval",
  resend_igmp: "resendIgmp",
  min_links: "minLinks",
  lp_interval: "lpInterval",
  packets_per_slave: "packetsPerSlave",
  num_peer_notif: "numPeerNotif",
  tlb_dynamic_lb: "tlbDynamicLb",
  all_slaves_active: "allSlavesActive",
  use_carrier: "useCarrier",
  ad_actor_sys_prio: "adActorSysPrio",
  ad_user_port_key: "adUserPortKey",
  peer_notify_delay: "peerNotifyDelay",
};

function parseBond(value: string): CmdlineNetworking["bond"] | undefined {
  const [name, members, options, mtu] = value.split(":");
  if (!name) return undefined;
  const bond: Record<string, unknown> = {};
  for (const opt of (options ?? "").split(",").filter(Boolean)) {
    const [k, v = ""] = opt.split("=") as [string, string?];
    if (k === "arp_ip_target") bond.arpIPTarget = v.split(";");
    else if (bondStringOptions[k]) bond[bondStringOptions[k]] = v;
    else if (bondNumberOptions[k] && /^\d+$/.test(v))
      bond[bondNumberOptions[k]] = k === "use_carrier" ? v === "1" : Number(v);
    else return undefined;
  }
  if (mtu !== undefined && mtu !== "" && !/^\d+$/.test(mtu)) return undefined;
  // A name the bond driver does not know leaves the bond out (reported as unsupported) rather than failing every network source.
  for (const [option, key] of [
    ["mode", "mode"],
    ["xmitHashPolicy", "xmitHashPolicy"],
    ["lacpRate", "lacpRate"],
    ["arpValidate", "arpValidate"],
    ["arpAllTargets", "arpAllTargets"],
    ["primaryReselect", "primaryReselect"],
    ["failOverMac", "failOverMac"],
    ["adSelect", "adSelect"],
  ] as const) {
    const v = bond[key];
    if (typeof v === "string" && !(bondNames[option] as readonly string[]).includes(v)) return undefined;
  }
  // The keys set above are Bond's own, each with its type.
  return {
    name,
    members: members ? members.split(",") : ["eth0", "eth1"],
    options: bond as Bond,
    mtu: mtu ? Number(mtu) : 0,
  };
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
  const res: CmdlineNetworking = {
    ignoreLinks: [],
    dhcpLinks: [],
    static: [],
    dnsServers: [],
    timeServers: [],
    vlans: [],
    unsupported: [],
  };
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
        if (name && parent && Number.isInteger(id) && id >= 1 && id <= 4094)
          res.vlans.push({ name, parent, vlanId: id });
        else res.unsupported.push(`vlan=${value}`);
        break;
      }
      case "bond": {
        const parsed = parseBond(value);
        if (parsed) res.bond = parsed;
        else res.unsupported.push(`bond=${value}`);
        break;
      }
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
