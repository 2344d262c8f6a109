import { BasaltError, describeError } from "../errors.js";
import { logger } from "../log.js";
import { noCgroups, type Cgroups } from "../sys/cgroups.js";
import { ServiceLogs } from "./logs.js";
import {
  ServiceRecord,
  type RunContext,
  type ServiceDefinition,
  type ServiceEvent,
  type ServiceState,
  type ServiceStatus,
} from "./service.js";

const log = logger("supervisor");

/** Called on every recorded event (a state transition or a health change) with the service's status after it. */
export type ServiceListener = (status: ServiceStatus, event: ServiceEvent) => void;

/** Talos's plain errors of the service API (gRPC Unknown): an unknown id, an operation the service does not allow. */
export class ServiceOperationError extends BasaltError {}

interface Entry {
  def: ServiceDefinition;
  record: ServiceRecord;
  wanted: boolean;
  timer: NodeJS.Timeout | undefined;
  healthTimer: NodeJS.Timeout | undefined;
  /** Notes, while the service is still starting, that it is slow (not failed). */
  slowTimer: NodeJS.Timeout | undefined;
  /** When the current run was launched (ms since epoch), for the elapsed time in logs. */
  launchedAt: number;
  /** Ends the wait for dependencies and conditions (a stop while Waiting to start). */
  waitAbort: AbortController | undefined;
}

/** States in which a service is not running and nothing will start it again by itself. */
const ended: ReadonlySet<ServiceState> = new Set(["Initialized", "Finished", "Failed", "Skipped"]);

export interface SupervisorOptions {
  /** How often a running service's health check runs (default 5 s). */
  healthIntervalMs?: number;
  /** How long a service waits before its restart (default 5 s, Talos's restart runner). */
  restartIntervalMs?: number;
  /** How often a start that has not finished is logged (default 30 s). */
  slowStartNoticeMs?: number;
  /** Where each service's output goes (one log per service id). */
  logs?: ServiceLogs;
  /** Where each service's processes go. */
  cgroups?: Cgroups;
}

/**
 * Runs services through Talos's states (Starting, Waiting, Preparing, Running, Stopping,
 * Finished, Failed, Skipped), restarts them per their policy after Talos's fixed interval
 * (`restartIntervalMs`, 5 s as Talos's restart runner), polls their health, and reports every
 * event to listeners (machined mirrors them into Service resources and the Events stream, the
 * console logs them). Starting has no deadline: a slow start stays Preparing (logged every
 * `slowStartNoticeMs`); only an exit is a failure.
 */
export class Supervisor {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<ServiceListener>();
  readonly logs: ServiceLogs;
  private readonly cgroups: Cgroups;
  private readonly healthIntervalMs: number;
  private readonly restartIntervalMs: number;
  private readonly slowStartNoticeMs: number;

  constructor(opts: SupervisorOptions = {}) {
    this.healthIntervalMs = opts.healthIntervalMs ?? 5000;
    this.restartIntervalMs = opts.restartIntervalMs ?? 5000;
    this.slowStartNoticeMs = opts.slowStartNoticeMs ?? 30_000;
    this.logs = opts.logs ?? new ServiceLogs();
    this.cgroups = opts.cgroups ?? noCgroups;
  }

  onChange(listener: ServiceListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Registers the service that is this process (machined), with the events Talos's goroutine
   * runner records for it; `health` probes it (Talos: its API socket answers).
   */
  registerSelf(id: string, health?: () => Promise<void>): void {
    const entry = this.newEntry({
      id,
      runner: { start: async () => undefined, stop: async () => undefined, ...(health ? { health } : {}) },
      restart: "never",
    });
    this.entries.set(id, entry);
    this.record(entry, "Starting", "Starting service");
    this.record(entry, "Preparing", "Running pre state");
    this.record(entry, "Preparing", "Creating service runner");
    this.record(entry, "Running", "Service started as goroutine");
    this.watchHealth(entry, entry.def);
  }

  list(): ServiceStatus[] {
    return [...this.entries.values()].map((e) => e.record.status()).sort((a, b) => a.id.localeCompare(b.id));
  }

  get(id: string): ServiceStatus | undefined {
    return this.entries.get(id)?.record.status();
  }

  /** Starts a service (or starts it again with a new definition); resolves once it runs or its start has failed. */
  async start(def: ServiceDefinition): Promise<void> {
    let entry = this.entries.get(def.id);
    if (!entry) {
      entry = this.newEntry(def);
      this.entries.set(def.id, entry);
    }
    entry.def = def;
    entry.wanted = true;
    await this.launch(entry, false);
  }

  /** Stops a service; `reason` is logged (why the supervisor ends it). */
  async stop(id: string, reason = "stop requested"): Promise<void> {
    const entry = this.entries.get(id);
    if (!entry) return;
    entry.wanted = false;
    const waitingToStart = entry.waitAbort !== undefined;
    entry.waitAbort?.abort();
    clearTimeout(entry.timer);
    clearInterval(entry.healthTimer);
    clearInterval(entry.slowTimer);
    const state = entry.record.state;
    if (state === "Running" || state === "Preparing") {
      log.info("stopping service", { service: id, reason, state, elapsedMs: elapsed(entry) });
      this.record(entry, "Stopping", "Stopping service");
      await entry.def.runner.stop().catch((err) => log.warn("stop failed", { service: id, error: describeError(err) }));
      await this.post(entry.def);
      this.record(entry, "Finished", "Service finished successfully");
    } else if (waitingToStart) {
      // As Talos: the cancelled wait is the condition's failure (its context canceled).
      this.failed(entry, conditionFailed(canceled));
    } else if (state === "Waiting" || state === "Starting") {
      // The pending restart was cancelled above; do not keep announcing it.
      this.record(entry, "Stopping", "Aborting restart sequence");
      this.record(entry, "Finished", "Service finished successfully");
    }
  }

  /** Stops every service, each after the services that depend on it (the latest started first among the rest). */
  async stopAll(reason = "shutting down"): Promise<void> {
    const remaining = [...this.entries.keys()].reverse();
    while (remaining.length > 0) {
      const i = Math.max(
        0,
        remaining.findIndex((id) => !remaining.some((other) => this.entries.get(other)!.def.dependsOn?.includes(id))),
      );
      const [id] = remaining.splice(i, 1);
      await this.stop(id!, reason);
    }
  }

  /** ServiceStart: starts a service that is not running, when it allows it (Talos's APIStart). Returns once it is on its way. */
  apiStart(id: string): void {
    const entry = this.defined(id);
    if (this.running(entry)) return;
    if (!entry.def.api?.start)
      throw new ServiceOperationError(`service ${JSON.stringify(id)} doesn't support start operation via API`, { id });
    this.start(entry.def).catch((err: unknown) =>
      log.error("starting service failed", { service: id, error: describeError(err) }),
    );
  }

  /** ServiceStop: stops a running service, when it allows it (Talos's APIStop). */
  async apiStop(id: string): Promise<void> {
    const entry = this.defined(id);
    if (!this.running(entry)) return;
    if (!entry.def.api?.stop)
      throw new ServiceOperationError(`service ${JSON.stringify(id)} doesn't support stop operation via API`, { id });
    await this.stop(id, "stopped through the API");
  }

  /** ServiceRestart: stops and starts a running service (a stopped one is started), when it allows it (Talos's APIRestart). */
  async apiRestart(id: string): Promise<void> {
    const entry = this.defined(id);
    if (!this.running(entry)) return this.apiStart(id);
    if (!entry.def.api?.restart)
      throw new ServiceOperationError(`service ${JSON.stringify(id)} doesn't support restart operation via API`, {
        id,
      });
    await this.stop(id, "restarted through the API");
    this.start(entry.def).catch((err: unknown) =>
      log.error("starting service failed", { service: id, error: describeError(err) }),
    );
  }

  private defined(id: string): Entry {
    const entry = this.entries.get(id);
    if (!entry) throw new ServiceOperationError(`service ${JSON.stringify(id)} not defined`, { id });
    return entry;
  }

  /** Talos's "running": its run has not ended (it may be waiting, starting, or between restarts). */
  private running(entry: Entry): boolean {
    return entry.wanted && !ended.has(entry.record.state);
  }

  private newEntry(def: ServiceDefinition): Entry {
    return {
      def,
      record: new ServiceRecord(def.id),
      wanted: true,
      timer: undefined,
      healthTimer: undefined,
      slowTimer: undefined,
      launchedAt: Date.now(),
      waitAbort: undefined,
    };
  }

  /**
   * Waits (state Waiting) until the service's dependencies run and its conditions hold; false when it
   * should not start. As Talos, a failed wait ends the service Failed whatever its restart policy.
   */
  private async prerequisites(entry: Entry, def: ServiceDefinition): Promise<boolean> {
    const deps = def.dependsOn ?? [];
    const conditions = def.conditions ?? [];
    const ac = new AbortController();
    const waits = [
      ...deps.map((d) => ({
        description: `service ${JSON.stringify(d)} to be "up"`,
        wait: () => this.untilUp(d, ac.signal),
      })),
      ...conditions.map((c) => ({ description: c.description, wait: () => c.wait(ac.signal) })),
    ];
    const pending = new Set(waits);
    const waiting = () => `Waiting for ${[...pending].map((w) => w.description).join(", ")}`;
    this.record(entry, "Waiting", waiting());
    entry.waitAbort = ac;
    try {
      await Promise.all(
        waits.map(async (w) => {
          await w.wait();
          pending.delete(w);
          // As Talos, the event names what is still awaited once part of it holds.
          if (pending.size > 0 && !ac.signal.aborted) this.record(entry, "Waiting", waiting());
        }),
      );
      return entry.wanted && entry.def === def;
    } catch (err) {
      // Aborted: stop() recorded the outcome.
      if (ac.signal.aborted) return false;
      if (entry.wanted && entry.def === def) this.failed(entry, conditionFailed(err));
      return false;
    } finally {
      // The other waits end too (one failed, or all held).
      ac.abort();
      if (entry.waitAbort === ac) entry.waitAbort = undefined;
    }
  }

  /** Talos's "up": Running and healthy (a service without a health check is healthy once Running), or Finished or Skipped. */
  private untilUp(id: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const record = this.entries.get(id)?.record;
        const up =
          record !== undefined &&
          (record.state === "Finished" ||
            record.state === "Skipped" ||
            (record.state === "Running" && record.health.healthy));
        if (!up) return;
        off();
        resolve();
      };
      const off = this.onChange(check);
      signal.addEventListener(
        "abort",
        () => {
          off();
          reject(signal.reason);
        },
        { once: true },
      );
      check();
    });
  }

  private async post(def: ServiceDefinition): Promise<void> {
    await def
      .post?.()
      .catch((err: unknown) => log.warn("post step failed", { service: def.id, error: describeError(err) }));
  }

  private runContext(def: ServiceDefinition): RunContext {
    const cgroup = def.cgroup ?? `/system/${def.id}`;
    return {
      openOutput: () => this.logs.writer(def.id),
      cgroup,
      oomScoreAdj: def.oomScoreAdj,
      placeProcess: (pid) => {
        try {
          this.cgroups.place(pid, cgroup, def.oomScoreAdj);
        } catch (err) {
          // The service runs either way; only its accounting and protection are missing.
          log.warn("placing a service process in its cgroup failed", {
            service: def.id,
            pid,
            cgroup,
            error: describeError(err),
          });
        }
      },
    };
  }

  /** One run: Starting, the wait (Waiting), Preparing, the runner's start, Running. A restart skips Starting, as Talos's restarter does. */
  private async launch(entry: Entry, restart: boolean): Promise<void> {
    const { def, record } = entry;
    if (!restart) {
      this.record(entry, "Starting", "Starting service");
      const waits = (def.dependsOn?.length ?? 0) + (def.conditions?.length ?? 0) > 0;
      if (waits && !(await this.prerequisites(entry, def))) return;
    }
    entry.launchedAt = Date.now();
    record.resetHealth();
    if (!restart) this.record(entry, "Preparing", "Running pre state");
    clearInterval(entry.slowTimer);
    entry.slowTimer = setInterval(() => {
      log.info("service is still starting", { service: def.id, elapsedMs: elapsed(entry) });
    }, this.slowStartNoticeMs);
    entry.slowTimer.unref();
    let runningMessage: string | void;
    if (!restart) {
      try {
        await def.pre?.();
      } catch (err) {
        clearInterval(entry.slowTimer);
        if (!entry.wanted || entry.def !== def) return;
        // As Talos: the pre stage runs outside the restart loop, so its failure ends the service whatever its policy.
        log.warn("service failed to start", {
          service: def.id,
          reason: `failed to run pre stage: ${describeError(err)}`,
          elapsedMs: elapsed(entry),
        });
        this.record(entry, "Failed", `Failed to run pre stage: ${describeError(err)}`);
        return;
      }
      // Stopped (or replaced) during the pre stage: stop() recorded the outcome.
      if (!entry.wanted || entry.def !== def) {
        clearInterval(entry.slowTimer);
        return;
      }
      this.record(entry, "Preparing", "Creating service runner");
    }
    try {
      runningMessage = await def.runner.start((err) => this.exited(entry, def, err), this.runContext(def));
    } catch (err) {
      clearInterval(entry.slowTimer);
      // Stopped (or replaced) while starting: stop() recorded the outcome; this is not a failure.
      if (!entry.wanted || entry.def !== def) return;
      const reason = describeError(err);
      log.warn("service failed to start", { service: def.id, reason, elapsedMs: elapsed(entry) });
      this.ended(entry, def, err instanceof Error ? err : new Error(reason));
      return;
    }
    clearInterval(entry.slowTimer);
    if (!entry.wanted || entry.def !== def) {
      // Stopped (or replaced) while starting: stop() already recorded the outcome; make sure it does not keep running.
      await def.runner
        .stop()
        .catch((err) => log.warn("stop after start failed", { service: def.id, error: describeError(err) }));
      return;
    }
    this.record(entry, "Running", runningMessage || "Service started");
    this.watchHealth(entry, def);
  }

  private watchHealth(entry: Entry, def: ServiceDefinition): void {
    const { record } = entry;
    clearInterval(entry.healthTimer);
    if (!def.runner.health) {
      this.healthChanged(entry, record.setHealth(true, ""));
      return;
    }
    // One probe at a time, as Talos's health loop runs its check in line: a slow probe (udevd's first
    // trigger and settle takes tens of seconds under emulation) is not started again beside itself.
    let probing = false;
    const probe = () => {
      if (probing) return;
      probing = true;
      def.runner.health!()
        .then(
          () => this.healthChanged(entry, record.setHealth(true, "")),
          (err: unknown) => this.healthChanged(entry, record.setHealth(false, describeError(err))),
        )
        .finally(() => (probing = false));
    };
    probe();
    entry.healthTimer = setInterval(probe, this.healthIntervalMs);
    entry.healthTimer.unref();
  }

  private healthChanged(entry: Entry, event: ServiceEvent | undefined): void {
    if (!event) return;
    // Reported, not acted on (as Talos).
    this.announce(entry, event);
  }

  private exited(entry: Entry, def: ServiceDefinition, err: Error | undefined): void {
    clearInterval(entry.healthTimer);
    if (!entry.wanted || entry.def !== def) return;
    log.warn("service exited", {
      service: def.id,
      reason: err ? describeError(err) : "exited with status 0",
      elapsedMs: elapsed(entry),
    });
    this.ended(entry, def, err);
  }

  /** After a run ended by itself (or failed to start): restart, finish or fail per the service's policy, with Talos's words. */
  private ended(entry: Entry, def: ServiceDefinition, err: Error | undefined): void {
    void this.post(def);
    const reason = err ? describeError(err) : "";
    const restart = def.restart === "always" || (def.restart === "untilSuccess" && err !== undefined);
    if (!restart) {
      if (err) this.failed(entry, `Failed running service: error running service: ${reason}`);
      else this.record(entry, "Finished", "Service finished successfully");
      return;
    }
    const runner = def.runner.describe?.() ?? def.id;
    const msg =
      def.restart === "untilSuccess"
        ? `Error running ${runner}, going to restart until it succeeds: ${reason}`
        : err
          ? `Error running ${runner}, going to restart forever: ${reason}`
          : `Runner ${runner} exited without error, going to restart it`;
    this.scheduleRestart(entry, msg);
  }

  private failed(entry: Entry, msg: string): void {
    log.warn("service failed", { service: entry.def.id, reason: msg });
    this.record(entry, "Failed", msg);
  }

  /** As Talos's restart runner: the same interval after every run, however often it has failed. */
  private scheduleRestart(entry: Entry, msg: string): void {
    if (!entry.wanted) return;
    log.info("restarting service", {
      service: entry.def.id,
      reason: msg,
      delayMs: this.restartIntervalMs,
      elapsedMs: elapsed(entry),
    });
    this.record(entry, "Waiting", msg);
    const def = entry.def;
    entry.timer = setTimeout(() => {
      if (entry.wanted && entry.def === def)
        this.launch(entry, true).catch((err: unknown) =>
          log.error("restarting service failed", { service: def.id, error: describeError(err) }),
        );
    }, this.restartIntervalMs);
    entry.timer.unref();
  }

  private record(entry: Entry, state: ServiceState, msg: string): void {
    this.announce(entry, entry.record.transition(state, msg));
  }

  private announce(entry: Entry, event: ServiceEvent): void {
    const status = entry.record.status();
    // The console line Talos prints for every service event.
    log.info(`service[${status.id}](${status.state}): ${event.msg}`);
    // Events are announced from timers and promise handlers: a failing listener is logged, not thrown there.
    for (const l of this.listeners) {
      try {
        l(status, event);
      } catch (err) {
        log.error("service event listener failed", {
          service: status.id,
          error: describeError(err),
          stack: err instanceof Error ? err.stack : undefined,
        });
      }
    }
  }
}

/** What a cancelled wait fails with: Go's context.Canceled, as Talos's message shows it. */
const canceled = new Error("context canceled");

/** Talos's event for a wait that failed: its runner's "condition failed: <err>", capitalized. */
function conditionFailed(err: unknown): string {
  return `Condition failed: ${describeError(err)}`;
}

function elapsed(entry: Entry): number {
  return Date.now() - entry.launchedAt;
}
