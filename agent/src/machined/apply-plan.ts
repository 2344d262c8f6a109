// What ApplyConfiguration does on a running node, mode by mode, as Talos v1.7 decides
// it: which changes apply without a reboot (its CanApplyImmediate list), the reply's
// mode_details texts, and the dry-run diff.

import { ApplyMode } from "../api/enums.js";
import type { ConfigBundle } from "../config/bundle.js";
import { InvalidInputError, UnimplementedError } from "../errors.js";

export type ApplyAction = "reboot" | "live" | "staged";

export interface ApplyPlan {
  action: ApplyAction;
  /** The mode the reply reports (AUTO resolves to REBOOT or NO_REBOOT). */
  mode: number;
  details: string;
}

/** v1alpha1 keys whose changes apply without a reboot (Talos v1.7 CanApplyImmediate). */
const immediateMachineKeys = new Set(["time", "certSANs", "network", "sysctls", "logging", "controlPlane", "kubelet", "kernel"]);

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
  const b = next.v1alpha1() as Record<string, Json> | undefined ?? {};
  const changed: string[] = [];
  changedPaths({ ...a, cluster: undefined, machine: undefined }, { ...b, cluster: undefined, machine: undefined }, "", changed);
  const ma = isObject(a["machine"]) ? a["machine"] : {};
  const mb = isObject(b["machine"]) ? b["machine"] : {};
  for (const k of new Set([...Object.keys(ma), ...Object.keys(mb)])) {
    if (!immediateMachineKeys.has(k)) changedPaths(ma[k], mb[k], `.machine.${k}`, changed);
  }
  return changed;
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
  staged: "Staged configuration to be applied after a reboot",
};

export function planApply(opts: { current: ConfigBundle | undefined; next: ConfigBundle; mode: number; dryRun: boolean }): ApplyPlan {
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
      if (needReboot.length > 0) throw new InvalidInputError(refusal, { fields: needReboot });
      plan = { action: "live", mode: ApplyMode.NO_REBOOT, details: details.live };
      break;
    case ApplyMode.AUTO:
      plan = needReboot.length > 0 ? { action: "reboot", mode: ApplyMode.REBOOT, details: `${details.reboot}: ${refusal}` } : { action: "live", mode: ApplyMode.NO_REBOOT, details: details.live };
      break;
    default:
      // TRY needs the revert timer, which is not built yet: say so rather than apply for good.
      throw new UnimplementedError("apply configuration --mode='try' is not supported yet");
  }
  if (!opts.dryRun) return plan;
  const diff = configDiff(opts.current?.toYaml() ?? "", opts.next.toYaml());
  return { ...plan, details: `Dry run summary:\n${plan.details} (skipped in dry-run).\n\nConfig diff:\n\n${diff}` };
}
