// What ApplyConfiguration does on a running node, mode by mode, as Talos v1.7.6
// decides it, and the mode_details its reply carries.

import { ApplyMode, applyModeName } from "../../api/enums.js";
import type { ConfigBundle } from "../../config/bundle.js";
import { toYamlText } from "../../config/encode.js";
import { InvalidInputError } from "../../errors.js";
import { defaultTryTimeoutMs, goDuration } from "./duration.js";
import { configDiff } from "./diff.js";
import { checkImmediate, encodedV1alpha1, RebootRequiredError } from "./immediate.js";

export type ApplyAction = "reboot" | "live" | "staged" | "try";

export interface ApplyPlan {
  action: ApplyAction;
  /** The mode the reply reports (AUTO resolves to REBOOT or NO_REBOOT). */
  mode: number;
  /** Changed fields that need a reboot (why AUTO reboots). */
  rebootFields: string[];
  /** The reply's mode_details (the dry-run summary for a dry run). */
  details: string;
  /** The diff of the v1alpha1 documents, current to next. */
  diff: string;
}

export interface ApplyPlanInput {
  current: ConfigBundle | undefined;
  next: ConfigBundle;
  mode: number;
  dryRun: boolean;
  /** try_mode_timeout (TRY only); Talos's default 1m when absent. */
  tryTimeoutMs?: number;
}

const withReboot = "Applied configuration with a reboot";
const withoutReboot = "Applied configuration without a reboot";
const staged = "Staged configuration to be applied after the next reboot";

const documentText = (bundle: ConfigBundle | undefined): string => {
  const doc = bundle?.documents.find((d) => d.kind === "v1alpha1");
  return doc ? toYamlText(encodedV1alpha1(doc)) : "";
};

/**
 * Decides an apply. NO_REBOOT and TRY with a change that needs a reboot throw
 * RebootRequiredError (InvalidArgument, Talos's text); an unknown mode throws
 * InvalidInputError. A dry run decides the same way and returns the summary.
 */
export function planApply(input: ApplyPlanInput): ApplyPlan {
  const { fields, refusal } = checkImmediate(input.current, input.next);
  const diff = configDiff(documentText(input.current), documentText(input.next));
  const plan = (action: ApplyAction, mode: number, summary: string, suffix = ""): ApplyPlan => ({
    action,
    mode,
    rebootFields: fields,
    // A dry run reports the summary alone: no AUTO reason, no try-mode note (as Talos).
    details: input.dryRun
      ? `Dry run summary:\n${summary} (skipped in dry-run).\nConfig diff:\n${diff}`
      : summary + suffix,
    diff,
  });
  switch (input.mode) {
    case ApplyMode.REBOOT:
      return plan("reboot", ApplyMode.REBOOT, withReboot);
    case ApplyMode.STAGED:
      return plan("staged", ApplyMode.STAGED, staged);
    case ApplyMode.AUTO:
      return refusal === undefined
        ? plan("live", ApplyMode.NO_REBOOT, withoutReboot)
        : plan("reboot", ApplyMode.REBOOT, withReboot, `: ${refusal}`);
    case ApplyMode.NO_REBOOT:
    case ApplyMode.TRY:
      if (refusal !== undefined) throw new RebootRequiredError(refusal, { mode: applyModeName(input.mode), fields });
      if (input.mode === ApplyMode.NO_REBOOT) return plan("live", ApplyMode.NO_REBOOT, withoutReboot);
      return plan(
        "try",
        ApplyMode.TRY,
        withoutReboot,
        `\nThe config is applied in 'try' mode and will be automatically reverted back in ${goDuration(input.tryTimeoutMs ?? defaultTryTimeoutMs)}`,
      );
    default:
      throw new InvalidInputError(`incorrect mode '${input.mode}' specified for the apply config call`, {
        mode: input.mode,
      });
  }
}
