// The apply state machine: where ApplyConfiguration's calls go in each of machined's modes.
// In maintenance mode a complete configuration ends the wait of the boot (one apply at a
// time, behind a lock); on a configured node an apply is stored, made active now, tried
// for a while (the try timer reverts it) or left for the next reboot, as planApply says.

import type * as grpc from "@grpc/grpc-js";
import { ApplyMode } from "../../api/enums.js";
import type { ConfigBundle } from "../../config/bundle.js";
import type { NetworkChangeHold } from "../../controllers/network/change-hold.js";
import { ConflictError, describeError } from "../../errors.js";
import { logger } from "../../log.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import type { ApidControl } from "../apid-control.js";
import { published } from "../published.js";
import { ReplyDeliveries } from "../reply-delivery.js";
import { ownsDisks, type MachineRuntime } from "../runtime.js";
import { SequenceAbortedError } from "../sequencer.js";
import { saveConfig } from "../tasks/state.js";
import {
  checkConfig,
  checkMaintenanceMode,
  maintenanceDryRunDetails,
  type ApplyRequest,
  type ConfigChecker,
} from "./check.js";
import { tryTimeoutMs } from "./duration.js";
import { planApply } from "./plan.js";
import { TryModeTimer } from "./try-timer.js";

const log = logger("machined");

/** Waiting for a configuration, running with one, or installing the one received. */
export type MachinedMode = "maintenance" | "normal" | "installing";

export interface ConfigApplierOptions {
  runtime: MachineRuntime;
  checker: ConfigChecker<ConfigBundle>;
  apid: Pick<ApidControl, "takeFeatures" | "restart">;
  /** Puts a configuration to work before its controller publishes it (the active config, log shipping, udev rules). */
  configure(bundle: ConfigBundle): Promise<void>;
  /** The node leaves maintenance mode (its console stops re-printing where to apply). */
  leftMaintenance(): void;
  /** Reboots the node (an apply whose changes need a reboot). */
  reboot(): void;
  /** Where an apply's network changes wait for its reply to leave; absent: no wait (the sandbox). */
  networkHold?: NetworkChangeHold | undefined;
  signal: AbortSignal;
}

export class ConfigApplier {
  private current: MachinedMode = "maintenance";
  private maintenanceLock: Promise<unknown> = Promise.resolve();
  private received: (text: string) => void = () => undefined;
  private readonly maintenanceConfig = new Promise<string>((resolve) => (this.received = resolve));
  // Activations run one at a time: each may restart apid.
  private activating: Promise<void> = Promise.resolve();
  private readonly tryTimer: TryModeTimer;
  // An apply's network changes wait for its reply to leave (Talos #8566).
  readonly replies: ReplyDeliveries;

  constructor(private readonly opts: ConfigApplierOptions) {
    this.replies = new ReplyDeliveries(opts.networkHold);
    this.tryTimer = new TryModeTimer((previous) => {
      log.info("try mode timed out: reverting to the previous configuration");
      this.activate(previous.toYaml()).catch((err: unknown) =>
        log.error("reverting the tried configuration failed", { error: describeError(err) }),
      );
    }, opts.signal);
  }

  get mode(): MachinedMode {
    return this.current;
  }

  /** The received configuration is being installed: applies wait for the installed system. */
  installing(): void {
    this.current = "installing";
  }

  /** The complete configuration applied in maintenance mode; a stop (SIGTERM) while waiting ends the wait, so machined can stop. */
  waitForConfig(): Promise<string> {
    const { signal } = this.opts;
    return new Promise<string>((resolve, reject) => {
      this.maintenanceConfig.then(resolve, reject);
      if (signal.aborted) reject(new SequenceAbortedError("stopped while waiting for a configuration"));
      signal.addEventListener(
        "abort",
        () => reject(new SequenceAbortedError("stopped while waiting for a configuration")),
        { once: true },
      );
    });
  }

  /**
   * Makes `text` the active configuration. Every accepted configuration becomes the one this boot
   * runs with; activating and saving read it when they run, so concurrent applies end with one
   * config, stored and active.
   */
  activate(text: string): Promise<void> {
    const run = this.activating.then(async () => {
      // The reply to the apply that sent it travels through apid, which this may restart: let it leave first.
      await new Promise((resolve) => setImmediate(resolve));
      const bundle = this.opts.checker.parse(Buffer.from(text));
      const restartApid = this.opts.apid.takeFeatures(bundle, this.current !== "normal");
      await this.opts.configure(bundle);
      // Its controller publishes it (an unchanged config is not written again): what follows reads the resource.
      await published<ConfigBundle>(
        this.opts.runtime.state,
        CONFIG_NAMESPACE,
        MachineConfigType,
        MachineConfigIds.active,
        this.opts.signal,
        (spec) => spec.toYaml() === text,
      );
      if (this.current !== "normal") {
        this.current = "normal";
        this.opts.leftMaintenance();
      }
      if (restartApid) await this.opts.apid.restart();
    });
    this.activating = run.catch(() => undefined);
    return run;
  }

  /** ApplyConfiguration. */
  async apply(req: ApplyRequest, call: grpc.ServerUnaryCall<ApplyRequest, unknown>): Promise<Record<string, unknown>> {
    const reqMode = req.mode ?? ApplyMode.REBOOT;
    const data = Buffer.from(req.data ?? Buffer.alloc(0));
    if (this.current === "installing")
      throw new ConflictError("the node is installing: apply the configuration again once it has rebooted");
    if (this.current === "maintenance") return this.applyInMaintenance(req, reqMode, data, call);
    const r = this.opts.runtime;
    const { config, warnings } = checkConfig(this.opts.checker, data);
    const current = r.state.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec;
    const timeoutMs = tryTimeoutMs(req.try_mode_timeout);
    // Any apply but another try confirms (or ends) a config being tried.
    if (reqMode !== ApplyMode.TRY) this.tryTimer.cancel();
    const plan = planApply({
      current,
      next: config,
      mode: reqMode,
      dryRun: req.dry_run === true,
      tryTimeoutMs: timeoutMs,
    });
    if (req.dry_run) return { mode: plan.mode, mode_details: plan.details };
    const text = data.toString("utf8");
    if (plan.action === "try") {
      // A tried config is neither stored nor this boot's config: a reboot, or the timeout, goes back to the active one.
      this.tryTimer.cancel();
      this.replies.expect(call.metadata);
      await this.activate(text);
      this.tryTimer.start(current!, timeoutMs);
      return { warnings, mode: plan.mode, mode_details: plan.details };
    }
    r.configText = text;
    await saveConfig(r);
    if (plan.action === "staged") return { warnings, mode: plan.mode, mode_details: plan.details };
    if (plan.action === "reboot") {
      this.opts.reboot();
      return { warnings, mode: plan.mode, mode_details: plan.details };
    }
    this.replies.expect(call.metadata);
    await this.activate(text);
    return { warnings, mode: plan.mode, mode_details: plan.details };
  }

  private applyInMaintenance(
    req: ApplyRequest,
    reqMode: number,
    data: Buffer,
    call: grpc.ServerUnaryCall<ApplyRequest, unknown>,
  ): Promise<Record<string, unknown>> {
    checkMaintenanceMode(reqMode);
    const r = this.opts.runtime;
    const run = this.maintenanceLock.then(async () => {
      const { config, warnings } = checkConfig(this.opts.checker, data);
      if (req.dry_run) return { warnings, mode: reqMode, mode_details: maintenanceDryRunDetails };
      // A config without a v1alpha1 document is kept but does not end maintenance (reference §2).
      if (config.completeForBoot) {
        this.replies.expect(call.metadata);
        r.configText = data.toString("utf8");
        // Stored before the reply where there is somewhere to store it (STATE mounted, or the sandbox's
        // state directory); a node that is not installed stores it on STATE during install.
        if (!ownsDisks(r) || r.volumes.has("STATE")) await saveConfig(r);
        this.received(r.configText);
        log.info("configuration received in maintenance mode");
      }
      return { warnings };
    });
    this.maintenanceLock = run.catch(() => undefined);
    return run;
  }
}
