// LinkStatuses and LinkSpecs: links as the kernel reports them and as the config layers ask for them (bonds, VLANs).

import { InvalidInputError } from "../../../errors.js";
import { defineResource } from "../../definitions.js";
import type { BondOptions } from "../../../sys/net.js";
import { hwAddrBytes, netValues, NETWORK_NAMESPACE, type ConfigLayer } from "./names.js";

// ---------------------------------------------------------------------------
// LinkStatuses.net.talos.dev (id = link name)

export const LinkStatusType = "LinkStatuses.net.talos.dev";
/** Key order is Talos's YAML order; optional keys are Go `omitempty` fields. */
export interface LinkStatusSpec {
  index: number;
  type: string;
  linkIndex: number;
  flags: string;
  hardwareAddr: string;
  permanentAddr: string;
  broadcastAddr: string;
  mtu: number;
  queueDisc: string;
  masterIndex?: number;
  operationalState: string;
  kind: string;
  slaveKind: string;
  busPath?: string;
  pciID?: string;
  driver?: string;
  driverVersion?: string;
  firmwareVersion?: string;
  productID?: string;
  vendorID?: string;
  product?: string;
  vendor?: string;
  linkState: boolean;
  speedMbit?: number;
  port: string;
  duplex: string;
  vlan?: { vlanID: number; vlanProtocol: string };
  bridgeMaster?: { stp: { enabled: boolean } };
  bondMaster?: BondMasterSpec;
}

export const linkStatusDefinition = defineResource<LinkStatusSpec>({
  type: LinkStatusType,
  defaultNamespace: NETWORK_NAMESPACE,
  aliases: ["link", "links"],
  printColumns: [
    { name: "Type", jsonPath: "{.type}" },
    { name: "Kind", jsonPath: "{.kind}" },
    { name: "Hw Addr", jsonPath: "{.hardwareAddr}" },
    { name: "Oper State", jsonPath: "{.operationalState}" },
    { name: "Link State", jsonPath: "{.linkState}" },
  ],
  protoSpecType: "talos.resource.definitions.network.LinkStatusSpec",
  toProto: (s) => ({
    index: s.index,
    type: netValues.linkType(s.type),
    link_index: s.linkIndex,
    flags: netValues.linkFlags(s.flags),
    hardware_addr: hwAddrBytes(s.hardwareAddr),
    permanent_addr: hwAddrBytes(s.permanentAddr),
    broadcast_addr: hwAddrBytes(s.broadcastAddr),
    mtu: s.mtu,
    queue_disc: s.queueDisc,
    master_index: s.masterIndex ?? 0,
    operational_state: netValues.operState(s.operationalState),
    kind: s.kind,
    slave_kind: s.slaveKind,
    bus_path: s.busPath ?? "",
    pciid: s.pciID ?? "",
    driver: s.driver ?? "",
    driver_version: s.driverVersion ?? "",
    firmware_version: s.firmwareVersion ?? "",
    product_id: s.productID ?? "",
    vendor_id: s.vendorID ?? "",
    product: s.product ?? "",
    vendor: s.vendor ?? "",
    link_state: s.linkState,
    speed_megabits: s.speedMbit ?? 0,
    port: netValues.port(s.port),
    duplex: netValues.duplex(s.duplex),
    ...(s.vlan ? { vlan: { vid: s.vlan.vlanID, protocol: VLAN_PROTOCOLS[s.vlan.vlanProtocol] ?? 0 } } : {}),
    ...(s.bridgeMaster ? { bridge_master: { stp: { enabled: s.bridgeMaster.stp.enabled } } } : {}),
    // The kernel may hold a value Talos has no name for; its number travels as it is.
    ...(s.bondMaster
      ? {
          bond_master: bondMasterProto(
            s.bondMaster,
            (option, name) => bondNameIndex(option, name) ?? (Number(name) || 0),
          ),
        }
      : {}),
  }),
});

/** Bond option names (Talos nethelpers) -> the kernel's numbers. */
export const bondNames = {
  mode: ["balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"],
  xmitHashPolicy: ["layer2", "layer3+4", "layer2+3", "encap2+3", "encap3+4"],
  lacpRate: ["slow", "fast"],
  arpValidate: ["none", "active", "backup", "all"],
  arpAllTargets: ["any", "all"],
  primaryReselect: ["always", "better", "failure"],
  failOverMac: ["none", "active", "follow"],
  adSelect: ["stable", "bandwidth", "count"],
} as const;
export type BondOptionName = keyof typeof bondNames;

/** The kernel number of a bond option's name; InvalidInputError for a name Talos does not know. */
export function bondValue(option: BondOptionName, name: string): number {
  const i = bondNameIndex(option, name);
  if (i === undefined)
    throw new InvalidInputError(`unknown bond ${option} ${JSON.stringify(name)}`, { option, value: name });
  return i;
}

function bondNameIndex(option: BondOptionName, name: string): number | undefined {
  const i = (bondNames[option] as readonly string[]).indexOf(name);
  return i < 0 ? undefined : i;
}

/**
 * A bond's settings as the kernel reports them, in Talos's BondMasterSpec YAML: names for
 * the enumerations (a number Talos has no name for as its digits), omitempty fields left
 * out when zero. primaryIndex: the primary member's index, 0 for none.
 */
export function bondMasterSpec(o: BondOptions, primaryIndex: number): BondMasterSpec {
  const name = (option: BondOptionName, n: number) => bondNames[option][n] ?? String(n);
  const spec: Record<string, unknown> = {
    mode: name("mode", o.mode),
    xmitHashPolicy: name("xmitHashPolicy", o.xmitHashPolicy),
    lacpRate: name("lacpRate", o.lacpRate),
    arpValidate: name("arpValidate", o.arpValidate),
    arpAllTargets: name("arpAllTargets", o.arpAllTargets),
    primary: primaryIndex,
    primaryReselect: name("primaryReselect", o.primaryReselect),
    failOverMac: name("failOverMac", o.failOverMac),
    adSelect: o.adSelect === 0 ? undefined : name("adSelect", o.adSelect),
  };
  const counts = [
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
  for (const k of counts) spec[k] = o[k];
  Object.assign(spec, {
    tlbLogicalLb: o.tlbDynamicLb,
    allSlavesActive: o.allSlavesActive,
    useCarrier: o.useCarrier || undefined,
    adActorSysPrio: o.adActorSysPrio,
    adUserPortKey: o.adUserPortKey,
    peerNotifyDelay: o.peerNotifyDelay,
  });
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(spec)) if (v !== undefined && v !== 0) out[k] = v;
  // Built key by key above from BondMasterSpec's own fields.
  return out as unknown as BondMasterSpec;
}

export const VLAN_PROTOCOLS: Record<string, number> = { "802.1q": 0x8100, "802.1ad": 0x88a8 };

export interface BondMasterSpec {
  mode: string;
  xmitHashPolicy: string;
  lacpRate: string;
  arpValidate: string;
  arpAllTargets: string;
  primary?: number;
  primaryReselect: string;
  failOverMac: string;
  adSelect?: string;
  miimon?: number;
  updelay?: number;
  downdelay?: number;
  arpInterval?: number;
  resendIgmp?: number;
  minLinks?: number;
  lpInterval?: number;
  packetsPerSlave?: number;
  numPeerNotif?: number;
  tlbLogicalLb?: number;
  allSlavesActive?: number;
  useCarrier?: boolean;
  adActorSysPrio?: number;
  adUserPortKey?: number;
  peerNotifyDelay?: number;
}

export const LinkSpecType = "LinkSpecs.net.talos.dev";
export interface LinkSpecSpec {
  name: string;
  logical: boolean;
  up: boolean;
  mtu: number;
  kind: string;
  type: string;
  parentName?: string;
  /** BondSlave, inline in Talos's YAML. */
  masterName?: string;
  slaveIndex?: number;
  bridgeSlave?: { masterName: string };
  vlan?: { vlanID: number; vlanProtocol: string };
  bondMaster?: BondMasterSpec;
  bridgeMaster?: { stp?: { enabled: boolean } };
  layer: ConfigLayer;
}
export const linkSpecDefinition = defineResource<LinkSpecSpec>({
  type: LinkSpecType,
  defaultNamespace: NETWORK_NAMESPACE,
  protoSpecType: "talos.resource.definitions.network.LinkSpecSpec",
  toProto: (s) => ({
    name: s.name,
    logical: s.logical,
    up: s.up,
    mtu: s.mtu,
    kind: s.kind,
    type: netValues.linkType(s.type),
    parent_name: s.parentName ?? "",
    bond_slave: { master_name: s.masterName ?? "", slave_index: s.slaveIndex ?? 0 },
    bridge_slave: { master_name: s.bridgeSlave?.masterName ?? "" },
    vlan: { vid: s.vlan?.vlanID ?? 0, protocol: VLAN_PROTOCOLS[s.vlan?.vlanProtocol ?? ""] ?? 0 },
    bond_master: s.bondMaster ? bondMasterProto(s.bondMaster) : {},
    bridge_master: { stp: { enabled: s.bridgeMaster?.stp?.enabled ?? false } },
    config_layer: netValues.layer(s.layer),
  }),
});

/** A bond spec in the kernel's numbers, every option present (zero where unset), as Talos's BondMasterSpec holds it. */
export function bondNumbers(
  b: BondMasterSpec,
  value: (option: BondOptionName, name: string) => number = bondValue,
): Omit<BondOptions, "primary"> {
  return {
    mode: value("mode", b.mode),
    xmitHashPolicy: value("xmitHashPolicy", b.xmitHashPolicy),
    lacpRate: value("lacpRate", b.lacpRate),
    arpValidate: value("arpValidate", b.arpValidate),
    arpAllTargets: value("arpAllTargets", b.arpAllTargets),
    primaryReselect: value("primaryReselect", b.primaryReselect),
    failOverMac: value("failOverMac", b.failOverMac),
    adSelect: value("adSelect", b.adSelect ?? "stable"),
    miimon: b.miimon ?? 0,
    updelay: b.updelay ?? 0,
    downdelay: b.downdelay ?? 0,
    arpInterval: b.arpInterval ?? 0,
    resendIgmp: b.resendIgmp ?? 0,
    minLinks: b.minLinks ?? 0,
    lpInterval: b.lpInterval ?? 0,
    packetsPerSlave: b.packetsPerSlave ?? 0,
    numPeerNotif: b.numPeerNotif ?? 0,
    tlbDynamicLb: b.tlbLogicalLb ?? 0,
    allSlavesActive: b.allSlavesActive ?? 0,
    useCarrier: b.useCarrier ?? false,
    adActorSysPrio: b.adActorSysPrio ?? 0,
    adUserPortKey: b.adUserPortKey ?? 0,
    peerNotifyDelay: b.peerNotifyDelay ?? 0,
  };
}

// BondMasterSpec's proto field names where they are not the option's name in snake case.
const bondProtoNames: Record<string, string> = {
  xmitHashPolicy: "hash_policy",
  miimon: "mii_mon",
  updelay: "up_delay",
  downdelay: "down_delay",
};

function bondMasterProto(
  b: BondMasterSpec,
  value?: (option: BondOptionName, name: string) => number,
): Record<string, unknown> {
  const out: Record<string, unknown> = { primary_index: b.primary ?? 0 };
  for (const [k, v] of Object.entries(bondNumbers(b, value)))
    out[bondProtoNames[k] ?? k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v;
  return out;
}
