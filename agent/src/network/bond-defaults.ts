// Talos's bond defaults (its BondMasterSpec FillDefaults), which every bond source gets
// (machine config, `bond=` on the command line, the platform's network config) before
// it reaches the kernel. Talos sets no miimon, updelay or downdelay: the config's values
// (zero: the driver's) are kept.

import type { BondMasterSpec } from "../resources/catalog/network.js";

// The order Talos's YAML prints the fields in.
const keyOrder = [
  "mode",
  "xmitHashPolicy",
  "lacpRate",
  "arpValidate",
  "arpAllTargets",
  "primary",
  "primaryReselect",
  "failOverMac",
  "adSelect",
  "miimon",
  "updelay",
  "downdelay",
  "arpInterval",
  "resendIgmp",
  "minLinks",
  "lpInterval",
  "packetsPerSlave",
  "numPeerNotif",
  "tlbLogicalLb",
  "allSlavesActive",
  "useCarrier",
  "adActorSysPrio",
  "adUserPortKey",
  "peerNotifyDelay",
] as const satisfies readonly (keyof BondMasterSpec)[];

export function withBondDefaults(spec: BondMasterSpec): BondMasterSpec {
  const filled: BondMasterSpec = {
    ...spec,
    resendIgmp: spec.resendIgmp || 1,
    lpInterval: spec.lpInterval || 1,
    packetsPerSlave: spec.packetsPerSlave || 1,
    numPeerNotif: spec.numPeerNotif || 1,
  };
  // As Talos: these two are forced, whatever the source said.
  if (spec.mode !== "balance-alb" && spec.mode !== "balance-tlb") filled.tlbLogicalLb = 1;
  if (spec.mode === "802.3ad") filled.adActorSysPrio = 65535;
  const ordered: Record<string, unknown> = {};
  for (const k of keyOrder) if (filled[k] !== undefined) ordered[k] = filled[k];
  // Built from `filled`'s own keys (every key of the type is in keyOrder).
  return ordered as unknown as BondMasterSpec;
}
