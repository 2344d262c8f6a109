// What the `default`, `cmdline` and `configuration` layers ask of the network, as
// Talos's AddressConfig/RouteConfig/LinkConfig/OperatorConfig controllers derive it:
// the loopback and every physical link up by default with DHCPv4 on the physical
// links nothing else configures; `ip=`/`vlan=` from the kernel command line; and
// `.machine.network.interfaces` (by name or deviceSelector, vlans, bond, bridge,
// dummy, addresses, routes, mtu, dhcp, ignore). Pure: the controllers publish it.

import { isIP } from "node:net";
import type { Bond, Device, DeviceSelector, NetworkConfig, Route, VIPConfig } from "../config/types/v1alpha1.js";
import {
  type AddressSpecSpec,
  type BondMasterSpec,
  type ConfigLayer,
  type LinkSpecSpec,
  type LinkStatusSpec,
  type RouteSpecSpec,
  bondNames,
  bondValue,
} from "../resources/catalog/network.js";
import type { CmdlineNetworking } from "./cmdline.js";
import { withBondDefaults } from "./bond-defaults.js";

export const DEFAULT_ROUTE_METRIC = 1024;

/** A link as the config sources see it (LinkStatus id + spec). */
export interface KnownLink {
  name: string;
  spec: Pick<LinkStatusSpec, "index" | "type" | "kind" | "hardwareAddr" | "permanentAddr"> & {
    busPath?: string;
    driver?: string;
    pciID?: string;
  };
}

export interface Dhcp4Want {
  linkName: string;
  routeMetric: number;
  layer: ConfigLayer;
}

export interface Dhcp6Want {
  linkName: string;
  routeMetric: number;
  /** Hex, "" for the client's default. */
  duid: string;
  layer: ConfigLayer;
}

export interface VipWant {
  linkName: string;
  ip: string;
}

export interface LayeredSpecs {
  addresses: AddressSpecSpec[];
  routes: RouteSpecSpec[];
  links: LinkSpecSpec[];
  dhcp4: Dhcp4Want[];
  /** Only the machine config asks for DHCPv6 (Talos never runs it by default). */
  dhcp6: Dhcp6Want[];
  /** Layer 2 shared addresses (`vip.ip`), configuration layer. */
  vips: VipWant[];
  /** Links no spec may touch (device.ignore, talos.network.interface.ignore). */
  ignored: Set<string>;
}

export const isPhysicalLink = (l: KnownLink): boolean => l.spec.type === "ether" && l.spec.kind === "";

function glob(pattern: string, value: string): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replaceAll("*", ".*")
      .replaceAll("?", ".")}$`,
    "i",
  );
  return re.test(value);
}

/** Whether a link matches every field a deviceSelector sets (globs as Talos allows them). */
export function selectorMatches(sel: DeviceSelector, link: KnownLink): boolean {
  const s = link.spec;
  if (sel.busPath !== undefined && !glob(sel.busPath, s.busPath ?? "")) return false;
  if (sel.hardwareAddr !== undefined && !glob(sel.hardwareAddr, s.hardwareAddr)) return false;
  if (sel.permanentAddr !== undefined && !glob(sel.permanentAddr, s.permanentAddr)) return false;
  if (sel.pciID !== undefined && !glob(sel.pciID, s.pciID ?? "")) return false;
  if (sel.driver !== undefined && !glob(sel.driver, s.driver ?? "")) return false;
  if (sel.physical !== undefined && sel.physical !== isPhysicalLink(link)) return false;
  return true;
}

/** The link name a device configures: its `interface`, or the first link (by name) its selector matches. */
export function deviceLinkName(dev: Device, links: readonly KnownLink[]): string | undefined {
  if (dev.interface) return dev.interface;
  if (!dev.deviceSelector) return undefined;
  return [...links].sort((a, b) => a.name.localeCompare(b.name)).find((l) => selectorMatches(dev.deviceSelector!, l))
    ?.name;
}

function splitPrefix(text: string): { addr: string; len: number; family: 4 | 6 } {
  const [addr, len] = text.split("/");
  const family = addr!.includes(":") ? 6 : 4;
  return { addr: addr!, len: len === undefined ? (family === 4 ? 32 : 128) : Number(len), family };
}

function staticAddress(linkName: string, prefix: string, layer: ConfigLayer): AddressSpecSpec {
  const p = splitPrefix(prefix);
  return {
    address: `${p.addr}/${p.len}`,
    linkName,
    family: p.family === 4 ? "inet4" : "inet6",
    scope: "global",
    flags: "permanent",
    layer,
  };
}

/** A default route's destination is Go's zero prefix (""), as the kernel reports it. */
function routeDst(network: string | undefined): string {
  if (!network) return "";
  const p = splitPrefix(network);
  return p.len === 0 ? "" : `${p.addr}/${p.len}`;
}

function configRoute(linkName: string, r: Route, layer: ConfigLayer): RouteSpecSpec {
  const gateway = r.gateway ?? "";
  const dst = routeDst(r.network);
  const v6 = gateway.includes(":") || (r.network ?? "").includes(":");
  const spec: RouteSpecSpec = {
    family: v6 ? "inet6" : "inet4",
    dst,
    src: r.source ?? "",
    gateway,
    outLinkName: linkName,
    table: "main",
    priority: r.metric || DEFAULT_ROUTE_METRIC,
    scope: gateway ? "global" : "link",
    type: "unicast",
    flags: "",
    protocol: "static",
    layer,
  };
  if (r.mtu) spec.mtu = r.mtu;
  return spec;
}

function bondMaster(b: Bond, links: readonly KnownLink[]): BondMasterSpec {
  // Talos's key order (its YAML prints them so); zero numbers are omitted as Go's omitempty does.
  const primary = b.primary ? links.find((l) => l.name === b.primary)?.spec.index : undefined;
  const ordered: BondMasterSpec = {
    mode: b.mode || "balance-rr",
    xmitHashPolicy: b.xmitHashPolicy || "layer2",
    lacpRate: b.lacpRate || "slow",
    arpValidate: b.arpValidate || "none",
    arpAllTargets: b.arpAllTargets || "any",
    ...(primary ? { primary } : {}),
    primaryReselect: b.primaryReselect || "always",
    failOverMac: b.failOverMac || "none",
  };
  // Names Talos does not know fail here, before anything reaches the kernel.
  for (const k of [
    "mode",
    "xmitHashPolicy",
    "lacpRate",
    "arpValidate",
    "arpAllTargets",
    "primaryReselect",
    "failOverMac",
  ] as const)
    bondValue(k, ordered[k]);
  if (b.adSelect && b.adSelect !== "stable") ordered.adSelect = bondNames.adSelect[bondValue("adSelect", b.adSelect)];
  const nums = [
    "miimon",
    "updelay",
    "downdelay",
    "arpInterval",
    "resendIgmp",
    "minLinks",
    "lpInterval",
    "packetsPerSlave",
    "numPeerNotif",
  ] as const;
  for (const k of nums) if (b[k]) ordered[k] = b[k];
  if (b.tlbDynamicLb) ordered.tlbLogicalLb = b.tlbDynamicLb;
  if (b.allSlavesActive) ordered.allSlavesActive = b.allSlavesActive;
  // The driver's default, and Talos's when the config leaves it out.
  if (b.useCarrier ?? true) ordered.useCarrier = true;
  if (b.adActorSysPrio) ordered.adActorSysPrio = b.adActorSysPrio;
  if (b.adUserPortKey) ordered.adUserPortKey = b.adUserPortKey;
  if (b.peerNotifyDelay) ordered.peerNotifyDelay = b.peerNotifyDelay;
  return withBondDefaults(ordered);
}

/** A shared address held by election on the link; Equinix Metal's and Hetzner's (their APIs move it) are not built. */
function isLayer2Vip(vip: VIPConfig | undefined): vip is VIPConfig & { ip: string } {
  return vip?.ip !== undefined && isIP(vip.ip) !== 0 && !vip.equinixMetal && !vip.hcloud;
}

/** Every layer below `operator` and `platform`, from the kernel command line and the machine config. */
export function layeredSpecs(
  network: NetworkConfig | undefined,
  links: readonly KnownLink[],
  cmdline: CmdlineNetworking,
): LayeredSpecs {
  const out: LayeredSpecs = {
    addresses: [],
    routes: [],
    links: [],
    dhcp4: [],
    dhcp6: [],
    vips: [],
    ignored: new Set(cmdline.ignoreLinks),
  };
  const configured = new Set<string>();

  // default: the loopback.
  out.links.push({ name: "lo", logical: false, up: true, mtu: 0, kind: "", type: "loopback", layer: "default" });
  out.addresses.push({
    address: "127.0.0.1/8",
    linkName: "lo",
    family: "inet4",
    scope: "host",
    flags: "permanent",
    layer: "default",
  });

  // cmdline: ip= and vlan=.
  const firstLink =
    [...links].filter((l) => l.spec.type !== "loopback").sort((a, b) => a.name.localeCompare(b.name))[0]?.name ?? "";
  for (const ip of cmdline.static) {
    const dev = ip.device || firstLink;
    if (!dev || out.ignored.has(dev)) continue;
    configured.add(dev);
    out.links.push({ name: dev, logical: false, up: true, mtu: 0, kind: "", type: "ether", layer: "cmdline" });
    if (ip.address) out.addresses.push(staticAddress(dev, `${ip.address}/${ip.prefixLen}`, "cmdline"));
    if (ip.gateway) out.routes.push(configRoute(dev, { gateway: ip.gateway }, "cmdline"));
  }
  for (const dev of cmdline.dhcpLinks) {
    if (out.ignored.has(dev)) continue;
    configured.add(dev);
    out.links.push({ name: dev, logical: false, up: true, mtu: 0, kind: "", type: "ether", layer: "cmdline" });
    out.dhcp4.push({ linkName: dev, routeMetric: DEFAULT_ROUTE_METRIC, layer: "cmdline" });
  }
  if (cmdline.bond) {
    const b = cmdline.bond;
    configured.add(b.name);
    out.links.push({
      name: b.name,
      logical: true,
      up: true,
      mtu: b.mtu,
      kind: "bond",
      type: "ether",
      bondMaster: bondMaster(b.options, links),
      layer: "cmdline",
    });
    b.members.forEach((m, i) => {
      configured.add(m);
      out.links.push({
        name: m,
        logical: false,
        up: true,
        mtu: 0,
        kind: "",
        type: "ether",
        masterName: b.name,
        slaveIndex: i,
        layer: "cmdline",
      });
    });
  }
  for (const v of cmdline.vlans) {
    configured.add(v.name);
    out.links.push({
      name: v.name,
      logical: true,
      up: true,
      mtu: 0,
      kind: "vlan",
      type: "ether",
      parentName: v.parent,
      vlan: { vlanID: v.vlanId, vlanProtocol: "802.1q" },
      layer: "cmdline",
    });
  }

  // configuration: .machine.network.interfaces.
  for (const dev of network?.interfaces ?? []) {
    const name = deviceLinkName(dev, links);
    if (!name) continue;
    configured.add(name);
    if (dev.ignore) {
      out.ignored.add(name);
      continue;
    }
    const layer: ConfigLayer = "configuration";
    const link: LinkSpecSpec = { name, logical: false, up: true, mtu: dev.mtu ?? 0, kind: "", type: "ether", layer };
    if (dev.bond) {
      Object.assign(link, { logical: true, kind: "bond", bondMaster: bondMaster(dev.bond, links) });
      const members = [...(dev.bond.interfaces ?? [])];
      for (const sel of dev.bond.deviceSelectors ?? []) {
        for (const l of [...links].sort((a, b) => a.name.localeCompare(b.name)))
          if (selectorMatches(sel, l) && !members.includes(l.name)) members.push(l.name);
      }
      members.forEach((m, i) => {
        configured.add(m);
        out.links.push({
          name: m,
          logical: false,
          up: true,
          mtu: 0,
          kind: "",
          type: "ether",
          masterName: name,
          slaveIndex: i,
          layer,
        });
      });
    } else if (dev.bridge) {
      Object.assign(link, {
        logical: true,
        kind: "bridge",
        bridgeMaster: { stp: { enabled: dev.bridge.stp?.enabled ?? false } },
      });
      for (const m of dev.bridge.interfaces ?? []) {
        configured.add(m);
        out.links.push({
          name: m,
          logical: false,
          up: true,
          mtu: 0,
          kind: "",
          type: "ether",
          bridgeSlave: { masterName: name },
          layer,
        });
      }
    } else if (dev.dummy) {
      Object.assign(link, { logical: true, kind: "dummy" });
    }
    out.links.push(link);
    const addrs = [...(dev.addresses ?? []), ...(dev.cidr ? [dev.cidr] : [])];
    for (const a of addrs) out.addresses.push(staticAddress(name, a, layer));
    for (const r of dev.routes ?? []) out.routes.push(configRoute(name, r, layer));
    if (dev.dhcp && dev.dhcpOptions?.ipv4 !== false)
      out.dhcp4.push({ linkName: name, routeMetric: dev.dhcpOptions?.routeMetric || DEFAULT_ROUTE_METRIC, layer });
    if (dev.dhcp && dev.dhcpOptions?.ipv6 === true)
      out.dhcp6.push({
        linkName: name,
        routeMetric: dev.dhcpOptions.routeMetric || DEFAULT_ROUTE_METRIC,
        duid: dev.dhcpOptions.duidv6 ?? "",
        layer,
      });
    if (isLayer2Vip(dev.vip)) out.vips.push({ linkName: name, ip: dev.vip.ip });
    for (const v of dev.vlans ?? []) {
      if (!v.vlanId) continue;
      const vname = `${name}.${v.vlanId}`;
      configured.add(vname);
      out.links.push({
        name: vname,
        logical: true,
        up: true,
        mtu: v.mtu ?? 0,
        kind: "vlan",
        type: "ether",
        parentName: name,
        vlan: { vlanID: v.vlanId, vlanProtocol: "802.1q" },
        layer,
      });
      for (const a of [...(v.addresses ?? []), ...(v.cidr ? [v.cidr] : [])])
        out.addresses.push(staticAddress(vname, a, layer));
      for (const r of v.routes ?? []) out.routes.push(configRoute(vname, r, layer));
      if (v.dhcp && v.dhcpOptions?.ipv4 !== false)
        out.dhcp4.push({ linkName: vname, routeMetric: v.dhcpOptions?.routeMetric || DEFAULT_ROUTE_METRIC, layer });
      if (v.dhcp && v.dhcpOptions?.ipv6 === true)
        out.dhcp6.push({
          linkName: vname,
          routeMetric: v.dhcpOptions.routeMetric || DEFAULT_ROUTE_METRIC,
          duid: v.dhcpOptions.duidv6 ?? "",
          layer,
        });
      if (isLayer2Vip(v.vip)) out.vips.push({ linkName: vname, ip: v.vip.ip });
    }
  }

  // default: every physical link nothing above mentions is brought up and runs DHCPv4.
  for (const l of links) {
    if (!isPhysicalLink(l) || configured.has(l.name) || out.ignored.has(l.name)) continue;
    out.links.push({ name: l.name, logical: false, up: true, mtu: 0, kind: "", type: "ether", layer: "default" });
    out.dhcp4.push({ linkName: l.name, routeMetric: DEFAULT_ROUTE_METRIC, layer: "default" });
  }

  const keep = <T extends { layer: ConfigLayer }>(xs: T[], link: (x: T) => string) =>
    xs.filter((x) => !out.ignored.has(link(x)));
  out.links = keep(out.links, (l) => l.name);
  out.addresses = keep(out.addresses, (a) => a.linkName);
  out.routes = keep(out.routes, (r) => r.outLinkName ?? "");
  out.dhcp4 = keep(out.dhcp4, (d) => d.linkName);
  out.dhcp6 = keep(out.dhcp6, (d) => d.linkName);
  out.vips = out.vips.filter((v) => !out.ignored.has(v.linkName));
  return out;
}
