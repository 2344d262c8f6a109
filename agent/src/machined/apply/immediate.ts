// Which config changes a running node can take without a reboot, as Talos v1.7.6
// decides it (Runtime.CanApplyImmediate): the new v1alpha1 document, with every
// live-applicable section replaced by the current one, must equal the current
// document. Only the v1alpha1 document counts; other documents apply live.

import type { ConfigBundle } from "../../config/bundle.js";
import { V1ALPHA1, type ConfigDocument } from "../../config/document.js";
import { encodeDocument, toYamlText } from "../../config/encode.js";
import { InvalidInputError } from "../../errors.js";
import { configDiff } from "./diff.js";

/** Top-level keys that apply live. */
const liveTopKeys = ["debug", "cluster"];
/** machine.* keys that apply live (registries: auth only after a containerd restart, as in Talos). */
const liveMachineKeys = [
  "ca",
  "acceptedCAs",
  "time",
  "certSANs",
  "install",
  "network",
  "sysfs",
  "sysctls",
  "logging",
  "controlPlane",
  "kubelet",
  "kernel",
  "registries",
  "pods",
  "seccompProfiles",
  "nodeLabels",
  "nodeTaints",
];
/** machine.features.* keys that apply live. */
const liveFeatureKeys = ["kubernetesTalosAPIAccess", "kubePrism", "hostDNS"];

/** A NO_REBOOT or TRY apply whose changes need a reboot; `fields` names them (Talos's text, InvalidArgument). */
export class RebootRequiredError extends InvalidInputError {}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** `into` with `keys` taken from `from` (removed where `from` lacks them). */
function withKeysOf(into: Obj, from: Obj, keys: readonly string[]): Obj {
  const out = { ...into };
  for (const k of keys) {
    if (k in from) out[k] = from[k];
    else delete out[k];
  }
  return out;
}

/** The next document with its live-applicable sections replaced by the current ones. */
function maskLive(current: Obj, next: Obj): Obj {
  const masked = withKeysOf(next, current, liveTopKeys);
  const [cm, nm] = [current["machine"], next["machine"]];
  if (isObj(cm) && isObj(nm)) {
    const machine = withKeysOf(nm, cm, liveMachineKeys);
    const [cf, nf] = [cm["features"], nm["features"]];
    if (isObj(cf) && isObj(nf)) machine["features"] = withKeysOf(nf, cf, liveFeatureKeys);
    masked["machine"] = machine;
  }
  return masked;
}

/** Dotted paths where two encoded values differ (list items as `[i]`). */
function changedPaths(a: unknown, b: unknown, at: string, out: string[]): void {
  if (isObj(a) && isObj(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)]))
      changedPaths(a[k], b[k], at ? `${at}.${k}` : k, out);
  } else if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    a.forEach((item, i) => changedPaths(item, b[i], `${at}[${i}]`, out));
  } else if (JSON.stringify(a) !== JSON.stringify(b)) {
    out.push(at);
  }
}

const v1alpha1Doc = (bundle: ConfigBundle): ConfigDocument | undefined =>
  bundle.documents.find((d) => d.kind === V1ALPHA1);

/** The v1alpha1 document as a node holds it: Go's encoding, where an absent field and its zero value are one. */
export const encodedV1alpha1 = (doc: ConfigDocument | undefined): unknown => (doc ? encodeDocument(doc) : undefined);

export interface ImmediateCheck {
  /** Fields whose change needs a reboot (empty when the change applies live). */
  fields: string[];
  /** Talos's refusal text, or undefined when the change applies live. */
  refusal: string | undefined;
}

/** Whether `next` can replace `current` without a reboot, and if not, why (Talos's wording). */
export function checkImmediate(current: ConfigBundle | undefined, next: ConfigBundle): ImmediateCheck {
  const cur = current && v1alpha1Doc(current);
  if (!current) return { fields: [], refusal: "no current config" };
  if (!cur) return { fields: [], refusal: "current config is not v1alpha1" };
  const nxt = v1alpha1Doc(next);
  if (!nxt) return { fields: [], refusal: "new config is not v1alpha1" };
  const before = encodedV1alpha1(cur) as Obj;
  const after = encodedV1alpha1({ ...nxt, value: maskLive(cur.value, nxt.value) }) as Obj;
  const fields: string[] = [];
  changedPaths(before, after, "", fields);
  if (fields.length === 0) return { fields, refusal: undefined };
  return {
    fields,
    refusal: `this config change can't be applied in immediate mode\ndiff: ${configDiff(toYamlText(before), toYamlText(after))}`,
  };
}

/** Paths of the v1alpha1 fields changed from `current` to `next` that need a reboot. */
export function fieldsNeedingReboot(current: ConfigBundle | undefined, next: ConfigBundle): string[] {
  return checkImmediate(current, next).fields;
}
