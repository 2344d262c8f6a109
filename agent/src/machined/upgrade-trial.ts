// After an upgrade, at every boot until it is settled: in the new slot the system is on
// trial until MachineStatus says Running and ready (or maintenance, on a node without a
// configuration), then confirmed; past the bound it
// reboots into the last good slot. Back in the old slot, the trial failed: the console says so.

import { describeError } from "../errors.js";
import { logger } from "../log.js";
import {
  MachineStatusId,
  MachineStatusType,
  RUNTIME_NAMESPACE,
  type MachineStatusSpec,
} from "../resources/catalog/runtime.js";
import { MetaTag } from "../storage/meta.js";
import { abandonUpgrade, clearOnce, confirmUpgrade } from "../storage/upgrade.js";
import { bootedLabel, judgeBoot, type BootVerdict } from "../storage/upgrade-slots.js";
import type { MachineRuntime } from "./runtime.js";
import { bootPartition } from "./tasks/upgrade.js";

const log = logger("upgrade");

/** How long a new system has to reach Running and ready before the node goes back to the old one. */
export const upgradeTrialBoundMs = 10 * 60_000;

export interface TrialOptions {
  signal: AbortSignal;
  boundMs?: number;
  /** Reboots through the firmware: GRUB's default is still the last good slot. */
  rollback(reason: string): void;
}

/** Settles an upgrade left in META 0x06; returns what this boot is. */
export async function settleUpgradeAtBoot(r: MachineRuntime, opts: TrialOptions): Promise<BootVerdict> {
  const verdict = judgeBoot(r.meta?.get(MetaTag.upgrade), bootedLabel(r.cmdline));
  if (verdict.kind === "normal" || !r.meta) return verdict;
  const boot = bootPartition(r, "boot-upgrade");
  if (verdict.kind === "failed") {
    log.error(
      `UPGRADE FAILED: the new system in slot ${verdict.failedSlot} did not reach Running and ready (it failed to boot, panicked, or machined did not get ready in time); ` +
        `the node booted back into slot ${verdict.booted} with its configuration`,
      { failedSlot: verdict.failedSlot, slot: verdict.booted },
    );
    await abandonUpgrade(boot, r.meta, verdict.booted);
    r.metaChanged();
    return verdict;
  }
  // Started: a failure from here on must go straight back to the old slot, not be tried again.
  await clearOnce(boot);
  log.info(
    `upgrade on trial in slot ${verdict.booted}: confirmed once Running and ready (within ${Math.round((opts.boundMs ?? upgradeTrialBoundMs) / 1000)} s), else back to slot ${verdict.previous}`,
    { ...verdict },
  );
  watchTrial(r, verdict, opts);
  return verdict;
}

function watchTrial(r: MachineRuntime, verdict: Extract<BootVerdict, { kind: "trial" }>, opts: TrialOptions): void {
  const stop = new AbortController();
  const cancel = () => stop.abort();
  opts.signal.addEventListener("abort", cancel, { once: true });
  let settled = false;
  const timer = setTimeout(() => {
    if (settled) return;
    settled = true;
    stop.abort();
    const reason = `the upgraded system in slot ${verdict.booted} did not reach Running and ready within ${Math.round((opts.boundMs ?? upgradeTrialBoundMs) / 1000)} s: rebooting into slot ${verdict.previous}`;
    log.error(reason, { ...verdict });
    // Refused (Conflict) while a shutdown, reset or upgrade runs: that one ends this boot instead; a throw here would end machined.
    try {
      opts.rollback(reason);
    } catch (err) {
      log.error("rolling back the upgrade failed", { error: describeError(err) });
    }
  }, opts.boundMs ?? upgradeTrialBoundMs);
  stop.signal.addEventListener("abort", () => clearTimeout(timer), { once: true });
  r.state.watch<MachineStatusSpec>(
    { namespace: RUNTIME_NAMESPACE, type: MachineStatusType, id: MachineStatusId },
    { signal: stop.signal, bootstrap: true },
    (ev) => {
      if (settled || ev.type === "destroyed") return;
      const spec = ev.resource.spec;
      // An installed node without a configuration serves maintenance mode: up, reachable, and never Running until configured.
      if (!(spec.stage === "running" && readyForTrial(spec)) && spec.stage !== "maintenance") return;
      settled = true;
      stop.abort();
      opts.signal.removeEventListener("abort", cancel);
      confirmUpgrade(bootPartition(r, "boot-upgrade"), r.meta!, verdict.booted)
        .then(() => {
          r.metaChanged();
          log.info(
            `upgrade confirmed: slot ${verdict.booted} is GRUB's default, slot ${verdict.previous} its fallback`,
            { ...verdict },
          );
        })
        .catch((err: unknown) =>
          log.error("confirming the upgrade failed: the next boot tries it again", { error: describeError(err) }),
        );
    },
  );
}

/** Services whose readiness waits on what is outside the node: registries, `talosctl bootstrap`, other members. */
const clusterServices = new Set(["kubelet", "etcd"]);

/** A `services` condition's problems ("<id> not running, <id> not healthy") all name cluster services. */
function onlyClusterServices(reason: string): boolean {
  return reason.split(", ").every((problem) => clusterServices.has(problem.split(" ")[0] ?? ""));
}

/**
 * Ready in every way the new system answers for. Left out: time sync, which waits on an NTP
 * server the node may never reach (an air-gapped site), and Kubernetes (the kubelet, etcd and
 * the static pods), which waits on registries, bootstrap and other nodes: an upgrade that
 * cannot be confirmed there would always be rolled back.
 */
export function readyForTrial(spec: MachineStatusSpec): boolean {
  return spec.status.unmetConditions.every(
    (c) => c.name === "time" || c.name === "staticPods" || (c.name === "services" && onlyClusterServices(c.reason)),
  );
}
