// time.SyncController: runs the SNTP syncer on the servers TimeServerStatus lists
// and publishes TimeStatus `node` (synced, epoch, syncDisabled) as Talos does.
// `.machine.time.disabled` stops the syncer and counts as synced; a
// `.machine.time.bootTimeout` past since start counts as synced too. Without a
// clock this node may adjust (the sandbox unless asked for a fake one, as Talos in
// a container), sync is disabled.

import type { ConfigBundle } from "../../config/bundle.js";
import { durationMs } from "../../config/checks.js";
import { NtpSyncer, type NtpSyncerOptions } from "../../network/ntp/syncer.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  NETWORK_NAMESPACE,
  TimeServerStatusId,
  TimeServerStatusType,
  type TimeServerStatusSpec,
} from "../../resources/catalog/network.js";
import { RUNTIME_NAMESPACE, TimeStatusType, type TimeStatusSpec } from "../../resources/catalog/runtime.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import type { SystemClock } from "../../sys/clock.js";
import { describeError } from "../../errors.js";
import { logger } from "../../log.js";

const log = logger("time-sync");

export const TimeStatusId = "node";

export interface TimeSyncOptions {
  /** The clock to follow the servers with; undefined: sync disabled (container mode). */
  clock?: SystemClock;
  /** Syncer tuning (tests: shorter polls, a resolver). */
  syncer?: Omit<NtpSyncerOptions, "clock" | "servers" | "onSynced" | "onEpochChange">;
  /** When the boot started (bootTimeout counts from it); default: when the controller was built. */
  bootTimeMs?: number;
}

interface Running {
  syncer: NtpSyncer;
  stop: AbortController;
  done: Promise<void>;
}

export class TimeSyncController implements Controller {
  readonly name = "time.SyncController";
  readonly inputs = [
    { namespace: NETWORK_NAMESPACE, type: TimeServerStatusType, id: TimeServerStatusId, kind: "weak" as const },
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active },
  ];
  readonly outputs = [{ type: TimeStatusType }];
  private readonly bootTime: number;
  private running: Running | undefined;
  private synced = false;
  private epoch = 0;
  private timeoutTimer: NodeJS.Timeout | undefined;
  private trigger: () => void = () => undefined;

  constructor(private readonly opts: TimeSyncOptions = {}) {
    this.bootTime = opts.bootTimeMs ?? Date.now();
  }

  /** The syncer's events (first sync, epoch change, boot timeout) are this controller's non-resource inputs. */
  watchSources(trigger: () => void, signal: AbortSignal): void {
    this.trigger = trigger;
    signal.addEventListener("abort", () => void this.stopSyncer(), { once: true });
  }

  /** The server the clock follows now, for the Time API ("" when none answered yet). */
  currentServer(): string {
    return this.running?.syncer.currentServer ?? "";
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const servers = ctx.get<TimeServerStatusSpec>(NETWORK_NAMESPACE, TimeServerStatusType, TimeServerStatusId)?.spec
      .timeServers;
    // The server list is not there yet: wait for it.
    if (!servers) return;
    const time = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1()
      ?.machine?.time;
    const syncDisabled = this.opts.clock === undefined || time?.disabled === true;
    const bootTimeoutMs = time?.bootTimeout ? (durationMs(time.bootTimeout) ?? 0) : 0;

    if (syncDisabled && this.running) await this.stopSyncer();
    if (!syncDisabled && !this.running) this.startSyncer(servers);
    if (!this.synced) this.armBootTimeout(bootTimeoutMs);
    this.running?.syncer.setServers(servers);

    const spec: TimeStatusSpec = { synced: this.synced || syncDisabled, epoch: this.epoch, syncDisabled };
    ctx.modify<TimeStatusSpec>(RUNTIME_NAMESPACE, TimeStatusType, TimeStatusId, () => spec);
  }

  private armBootTimeout(timeoutMs: number): void {
    if (this.timeoutTimer) clearTimeout(this.timeoutTimer);
    this.timeoutTimer = undefined;
    if (timeoutMs <= 0) return;
    const left = this.bootTime + timeoutMs - Date.now();
    if (left <= 0) {
      this.synced = true;
      return;
    }
    this.timeoutTimer = setTimeout(() => {
      this.timeoutTimer = undefined;
      this.synced = true;
      this.trigger();
    }, left);
  }

  private startSyncer(servers: string[]): void {
    const stop = new AbortController();
    const syncer = new NtpSyncer({
      ...this.opts.syncer,
      clock: this.opts.clock!,
      servers,
      onSynced: () => {
        this.synced = true;
        this.trigger();
      },
      onEpochChange: () => {
        this.epoch++;
        this.trigger();
      },
    });
    // A restarted syncer has to sync again before TimeStatus says so (Talos resets it too).
    this.synced = false;
    this.running = {
      syncer,
      stop,
      done: syncer
        .run(stop.signal)
        .catch((err: unknown) => log.error("time sync stopped", { error: describeError(err) })),
    };
  }

  private async stopSyncer(): Promise<void> {
    if (this.timeoutTimer) clearTimeout(this.timeoutTimer);
    this.timeoutTimer = undefined;
    const running = this.running;
    if (!running) return;
    this.running = undefined;
    running.stop.abort();
    await running.done;
  }
}
