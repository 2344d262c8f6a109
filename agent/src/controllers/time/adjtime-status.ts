// time.AdjtimeStatusController: publishes AdjtimeStatus `node`, the kernel's clock
// discipline (adjtimex read without changing anything), every 30 s as Talos does. Not
// run without a clock of this node's own (the sandbox, as Talos in a container).

import { AdjtimeStatusType, type AdjtimeStatusSpec, RUNTIME_NAMESPACE } from "../../resources/catalog/runtime.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import type { KernelTimeState, SystemClock } from "../../sys/clock.js";

export const AdjtimeStatusId = "node";
const POLL_MS = 30_000;

// <linux/timex.h> STA_* bits in Talos's order, with its labels.
const statusBits: Array<[number, string]> = [
  [0x0001, "STA_PLL"],
  [0x0002, "STA_PPSFREQ"],
  [0x0004, "STA_PPSTIME"],
  [0x0008, "STA_FLL"],
  [0x0010, "STA_INS"],
  [0x0020, "STA_DEL"],
  [0x0040, "STA_UNSYNC"],
  [0x0080, "STA_FREQHOLD"],
  [0x0100, "STA_PPSSIGNAL"],
  [0x0200, "STA_PPSJITTER"],
  [0x0400, "STA_PPSWANDER"],
  [0x0800, "STA_PPSERROR"],
  [0x1000, "STA_CLOCKERR"],
  [0x2000, "STA_NANO"],
  [0x4000, "STA_MODE"],
  [0x8000, "STA_CLK"],
];
const STA_UNSYNC = 0x0040;
const STA_NANO = 0x2000;
const states = ["TIME_OK", "TIME_INS", "TIME_DEL", "TIME_OOP", "TIME_WAIT", "TIME_ERROR"];

export function adjtimeStatusSpec(k: KernelTimeState): AdjtimeStatusSpec {
  return {
    offsetNs: k.status & STA_NANO ? k.offset : k.offset * 1000,
    frequencyAdjustmentRatio: 1 + k.freq / 65536 / 1e6,
    maxErrorNs: k.maxErrorUs * 1000,
    estErrorNs: k.estErrorUs * 1000,
    status: statusBits
      .filter(([bit]) => (k.status & bit) !== 0)
      .map(([, label]) => label)
      .join(" | "),
    constant: k.constant,
    syncStatus: (k.status & STA_UNSYNC) === 0,
    state: states[k.state] ?? "TIME_UNKNOWN",
  };
}

export class AdjtimeStatusController implements Controller {
  readonly name = "time.AdjtimeStatusController";
  readonly inputs = [];
  readonly outputs = [{ type: AdjtimeStatusType }];

  constructor(private readonly clock: SystemClock) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const spec = adjtimeStatusSpec(this.clock.kernelState());
    ctx.modify<AdjtimeStatusSpec>(RUNTIME_NAMESPACE, AdjtimeStatusType, AdjtimeStatusId, () => spec);
    ctx.requeueAfter(POLL_MS);
  }
}
