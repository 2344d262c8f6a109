// What ApplyConfiguration does on a running node, mode by mode, as Talos v1.7.6 decides
// it: which changes apply without a reboot (its CanApplyImmediate list), the reply's
// mode_details texts, and the dry-run summary. Talos's diff is Go's cmp.Diff of its
// structs; ours is a unified diff of the YAML documents.

import { ApplyMode } from "../api/enums.js";
import type { ConfigBundle } from "../config/bundle.js";
import { InvalidInputError } from "../errors.js";

export type ApplyAction = "reboot" | "live" | "staged" | "try";

export interface ApplyPlan {
  action: ApplyAction;
  /** The mode the reply reports (AUTO resolves to REBOOT or NO_REBOOT). */
  mode: number;
  details: string;
}

/** v1alpha1 keys whose changes apply without a reboot (Talos v1.7.6 CanApplyImmediate). */
const immediateTopKeys = new Set(["debug", "cluster"]);
const immediateMachineKeys = new Set([
  "ca", "acceptedCAs", "time", "certSANs", "install", "network", "sysfs", "sysctls", "logging", "controlPlane", "kubelet", "kernel",
  "registries", "pods", "seccompProfiles", "nodeLabels", "nodeTaints",
]);
const immediateFeatureKeys = new Set(["kubernetesTalosAPIAccess", "kubePrism", "hostDNS"]);

/** Talos's default try_mode_timeout (constants.ConfigTryTimeout). */
export const defaultTryTimeoutMs = 60_000;

type Json = unknown;
const isObject = (v: Json): v is Record<string, Json> => typeof v === "object" && v !== null && !Array.isArray(v);

function changedPaths(a: Json, b: Json, at: string, out: string[]): void {
  if (isObject(a) && isObject(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) changedPaths(a[k], b[k], `${at}.${k}`, out);
    return;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push(at);
}

/** Paths of v1alpha1 fields changed between the configs that need a reboot to take effect. */
export function fieldsNeedingReboot(current: ConfigBundle | undefined, next: ConfigBundle): string[] {
  const a = (current?.v1alpha1() ?? {}) as Record<string, Json>;
  const b = (next.v1alpha1() ?? {}) as Record<string, Json>;
  const changed: string[] = [];
  const compare = (x: Record<string, Json>, y: Record<string, Json>, at: string, allowed: Set<string>, nested?: Record<string, Set<string>>) => {
    for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) {
      if (allowed.has(k)) continue;
      const sub = nested?.[k];
      if (sub) compare(isObject(x[k]) ? x[k] : {}, isObject(y[k]) ? y[k] : {}, `${at}.${k}`, sub);
      else changedPaths(x[k], y[k], `${at}.${k}`, changed);
    }
  };
  compare({ ...a, machine: undefined }, { ...b, machine: undefined }, "", immediateTopKeys);
  compare(isObject(a["machine"]) ? a["machine"] : {}, isObject(b["machine"]) ? b["machine"] : {}, ".machine", immediateMachineKeys, { features: immediateFeatureKeys });
  return changed;
}

/** A Go duration string for whole seconds: 1m0s, 30s, 1h0m0s. */
export function goDuration(ms: number): string {
  const total = Math.round(ms / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = total % 60;
  if (h > 0) return `${h}h${m}m${sec}s`;
  if (m > 0) return `${m}m${sec}s`;
  return `${sec}s`;
}

/** A unified diff of two texts (line based, as talosctl shows the config diff). */
export function configDiff(before: string, after: string): string {
  if (before === after) return "No changes.";
  const a = before.split("\n");
  const b = after.split("\n");
  // Longest common subsequence table, from the end.
  const lcs = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) for (let j = b.length - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const ops: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) ops.push(` ${a[i++]}`), j++;
    else if (i < a.length && (j >= b.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) ops.push(`-${a[i++]}`);
    else ops.push(`+${b[j++]}`);
  }
  // Changed lines with three lines of context around them, as a unified diff shows them.
  const near = ops.map((_, k) => ops.slice(Math.max(0, k - 3), k + 4).some((o) => !o.startsWith(" ")));
  const lines = ["--- a", "+++ b"];
  ops.forEach((o, k) => {
    if (!near[k]) return;
    if (k > 0 && !near[k - 1]) lines.push("@@");
    lines.push(o);
  });
  return lines.join("\n");
}

const details = {
  reboot: "Applied configuration with a reboot",
  live: "Applied configuration without a reboot",
  staged: "Staged configuration to be applied after the next reboot",
};

export function planApply(opts: { current: ConfigBundle | undefined; next: ConfigBundle; mode: number; dryRun: boolean; tryTimeoutMs?: number }): ApplyPlan {
  const needReboot = fieldsNeedingReboot(opts.current, opts.next);
  const refusal = `this config change can't be applied in immediate mode\ndiff: ${needReboot.join(", ")}`;
  let plan: ApplyPlan;
  switch (opts.mode) {
    case ApplyMode.REBOOT:
      plan = { action: "reboot", mode: ApplyMode.REBOOT, details: details.reboot };
      break;
    case ApplyMode.STAGED:
      plan = { action: "staged", mode: ApplyMode.STAGED, details: details.staged };
      break;
    case ApplyMode.NO_REBOOT:
    case ApplyMode.TRY:
      if (needReboot.length > 0) throw new InvalidInputError(refusal, { fields: needReboot });
      plan = opts.mode === ApplyMode.TRY
        ? { action: "try", mode: ApplyMode.TRY, details: `${details.live}\nThe config is applied in 'try' mode and will be automatically reverted back in ${goDuration(opts.tryTimeoutMs ?? defaultTryTimeoutMs)}` }
        : { action: "live", mode: ApplyMode.NO_REBOOT, details: details.live };
      break;
    case ApplyMode.AUTO:
      plan = needReboot.length > 0 ? { action: "reboot", mode: ApplyMode.REBOOT, details: `${details.reboot}: ${refusal}` } : { action: "live", mode: ApplyMode.NO_REBOOT, details: details.live };
      break;
    default:
      throw new InvalidInputError(`incorrect mode '${opts.mode}' specified for the apply config call`);
  }
  if (!opts.dryRun) return plan;
  // Talos's summary names the action without the try-mode note or AUTO's reason.
  const summary = plan.action === "try" ? details.live : plan.action === "reboot" ? details.reboot : plan.details;
  const diff = configDiff(opts.current?.toYaml() ?? "", opts.next.toYaml());
  return { ...plan, details: `Dry run summary:\n${summary} (skipped in dry-run).\nConfig diff:\n${diff}` };
}
