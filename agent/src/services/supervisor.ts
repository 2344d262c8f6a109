import { describeError } from "../errors.js";
import { logger } from "../log.js";
import { ServiceRecord, type ServiceDefinition, type ServiceStatus } from "./service.js";

const log = logger("supervisor");

export type ServiceListener = (status: ServiceStatus) => void;

interface Entry {
  def: ServiceDefinition;
  record: ServiceRecord;
  wanted: boolean;
  restarts: number;
  timer: NodeJS.Timeout | undefined;
  healthTimer: NodeJS.Timeout | undefined;
  /** Fires once the current run has lasted long enough to forget earlier failures. */
  stableTimer: NodeJS.Timeout | undefined;
  /** Notes, while the service is still starting, that it is slow (not failed). */
  slowTimer: NodeJS.Timeout | undefined;
  /** When the current run was launched (ms since epoch), for the elapsed time in logs. */
  launchedAt: number;
  /** Ends the wait for dependencies and conditions (a stop while Waiting to start). */
  waitAbort: AbortController | undefined;
}

/**
 * Runs services, restarts them with capped exponential backoff, polls their
 * health, and reports every change to listeners (machined mirrors them into
 * Service resources and the Events stream). A run that stays up and healthy
 * for `stableRunMs` resets the backoff, so a crash after a long healthy run
 * is retried quickly again. Starting has no deadline: a slow start stays
 * Preparing (logged every `slowStartNoticeMs`); only an exit is a failure.
 * Every stop, failure and restart is logged with the service, the reason and
 * the time since the run was launched.
 */
export class Supervisor {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<ServiceListener>();

  constructor(
    private readonly healthIntervalMs = 5000,
    private readonly stableRunMs = 60_000,
    private readonly slowStartNoticeMs = 30_000,
  ) {}

  onChange(listener: ServiceListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Registers a service that is always Running because it is this process (machined itself). */
  registerSelf(id: string): void {
    const record = new ServiceRecord(id);
    record.transition("Running", "Service started as goroutine");
    record.setHealth(true, "");
    this.entries.set(id, {
      def: { id, runner: { start: async () => undefined, stop: async () => undefined }, restart: "never" },
      record, wanted: true, restarts: 0, timer: undefined, healthTimer: undefined, stableTimer: undefined, slowTimer: undefined, launchedAt: Date.now(), waitAbort: undefined,
    });
    this.emit(record);
  }

  list(): ServiceStatus[] {
    return [...this.entries.values()].map((e) => e.record.status()).sort((a, b) => a.id.localeCompare(b.id));
  }

  get(id: string): ServiceStatus | undefined {
    return this.entries.get(id)?.record.status();
  }

  async start(def: ServiceDefinition): Promise<void> {
    let entry = this.entries.get(def.id);
    if (!entry) {
      entry = {
        def, record: new ServiceRecord(def.id), wanted: true, restarts: 0,
        timer: undefined, healthTimer: undefined, stableTimer: undefined, slowTimer: undefined, launchedAt: Date.now(), waitAbort: undefined,
      };
      this.entries.set(def.id, entry);
    }
    entry.def = def;
    entry.wanted = true;
    await this.launch(entry);
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
    clearTimeout(entry.stableTimer);
    clearInterval(entry.slowTimer);
    if (entry.record.state === "Running" || entry.record.state === "Preparing") {
      log.info("stopping service", { service: id, reason, state: entry.record.state, elapsedMs: elapsed(entry) });
      entry.record.transition("Stopping", "Stopping service");
      this.emit(entry.record);
      await entry.def.runner.stop().catch((err) => log.warn("stop failed", { service: id, error: describeError(err) }));
      await this.post(entry.def);
      entry.record.transition("Finished", "Service finished successfully");
      this.emit(entry.record);
    } else if (entry.record.state === "Waiting") {
      // The pending restart (or the wait to start) was cancelled above; do not keep announcing it.
      entry.record.transition("Finished", waitingToStart ? "Service stopped before it started" : "Service stopped before its restart");
      this.emit(entry.record);
    }
  }

  /** Stops every service, each after the services that depend on it (the latest started first among the rest). */
  async stopAll(reason = "shutting down"): Promise<void> {
    const remaining = [...this.entries.keys()].reverse();
    while (remaining.length > 0) {
      const i = Math.max(0, remaining.findIndex((id) => !remaining.some((other) => this.entries.get(other)!.def.dependsOn?.includes(id))));
      const [id] = remaining.splice(i, 1);
      await this.stop(id!, reason);
    }
  }

  /** Waits (state Waiting) until the service's dependencies run and its conditions hold; false when it should not start. */
  private async prerequisites(entry: Entry, def: ServiceDefinition): Promise<boolean> {
    const deps = def.dependsOn ?? [];
    const conditions = def.conditions ?? [];
    const awaited = [...deps.map((d) => `service "${d}" to be "up"`), ...conditions.map((c) => c.description)];
    entry.record.transition("Waiting", `Waiting for ${awaited.join(", ")}`);
    this.emit(entry.record);
    const ac = new AbortController();
    entry.waitAbort = ac;
    try {
      await Promise.all([...deps.map((d) => this.untilRunning(d, ac.signal)), ...conditions.map((c) => c.wait(ac.signal))]);
      return entry.wanted && entry.def === def;
    } catch (err) {
      if (ac.signal.aborted) return false;
      const reason = describeError(err);
      log.warn("service condition failed", { service: def.id, reason });
      entry.record.transition("Failed", `Condition failed: ${reason}`);
      this.emit(entry.record);
      this.scheduleRestart(entry, `condition failed: ${reason}`);
      return false;
    } finally {
      if (entry.waitAbort === ac) entry.waitAbort = undefined;
    }
  }

  private untilRunning(id: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.entries.get(id)?.record.state !== "Running") return;
        off();
        resolve();
      };
      const off = this.onChange(check);
      signal.addEventListener("abort", () => {
        off();
        reject(signal.reason);
      }, { once: true });
      check();
    });
  }

  private async post(def: ServiceDefinition): Promise<void> {
    await def.post?.().catch((err: unknown) => log.warn("post step failed", { service: def.id, error: describeError(err) }));
  }

  private async launch(entry: Entry): Promise<void> {
    const { def, record } = entry;
    // Without prerequisites the service turns Preparing at once (no await before it).
    const waits = (def.dependsOn?.length ?? 0) + (def.conditions?.length ?? 0) > 0;
    if (waits && !(await this.prerequisites(entry, def))) return;
    entry.launchedAt = Date.now();
    record.transition("Preparing", "Running pre state");
    this.emit(record);
    clearInterval(entry.slowTimer);
    entry.slowTimer = setInterval(() => {
      log.info("service is still starting", { service: def.id, elapsedMs: elapsed(entry) });
    }, this.slowStartNoticeMs);
    entry.slowTimer.unref();
    try {
      await def.pre?.();
      await def.runner.start((err) => this.exited(entry, err));
    } catch (err) {
      clearInterval(entry.slowTimer);
      // Stopped (or replaced) while starting: stop() recorded the outcome; this is not a failure.
      if (!entry.wanted || entry.def !== def) return;
      const reason = describeError(err);
      log.warn("service failed to start", { service: def.id, reason, elapsedMs: elapsed(entry) });
      record.transition("Failed", `Failed to start: ${reason}`);
      this.emit(record);
      this.scheduleRestart(entry, `failed to start: ${reason}`);
      return;
    }
    clearInterval(entry.slowTimer);
    if (!entry.wanted || entry.def !== def) {
      // Stopped (or replaced) while starting: stop() already recorded the outcome; make sure it does not keep running.
      await def.runner.stop().catch((err) => log.warn("stop after start failed", { service: def.id, error: describeError(err) }));
      return;
    }
    record.transition("Running", "Service started");
    this.emit(record);
    clearTimeout(entry.stableTimer);
    entry.stableTimer = setTimeout(() => {
      // A run that is still failing its health check has not proven anything.
      if (record.state === "Running" && record.health.healthy) entry.restarts = 0;
    }, this.stableRunMs);
    entry.stableTimer.unref();
    if (def.runner.health) {
      clearInterval(entry.healthTimer);
      const probe = () => {
        def.runner.health!().then(
          () => {
            if (!record.health.unknown && !record.health.healthy) log.info("service health check passed again", { service: def.id, elapsedMs: elapsed(entry) });
            record.setHealth(true, "");
          },
          (err: unknown) => {
            // Reported, not acted on (as Talos): logged when it turns unhealthy, not on every probe.
            if (record.health.unknown || record.health.healthy) log.warn("service health check failed", { service: def.id, reason: describeError(err), elapsedMs: elapsed(entry) });
            record.setHealth(false, describeError(err));
          },
        ).finally(() => this.emit(record));
      };
      probe();
      entry.healthTimer = setInterval(probe, this.healthIntervalMs);
      entry.healthTimer.unref();
    } else {
      record.setHealth(true, "");
      this.emit(record);
    }
  }

  private exited(entry: Entry, err: Error | undefined): void {
    clearInterval(entry.healthTimer);
    clearTimeout(entry.stableTimer);
    if (!entry.wanted) return;
    const reason = err ? describeError(err) : "exited with status 0";
    const msg = err ? `Error running service: ${reason}` : "Service exited";
    entry.record.transition(err ? "Failed" : "Finished", msg);
    this.emit(entry.record);
    log.warn("service exited", { service: entry.def.id, reason, elapsedMs: elapsed(entry) });
    void this.post(entry.def);
    if (entry.def.restart === "always" || (entry.def.restart === "untilSuccess" && err)) this.scheduleRestart(entry, `exited: ${reason}`);
  }

  private scheduleRestart(entry: Entry, reason: string): void {
    if (!entry.wanted) return;
    const delay = Math.min(500 * 2 ** entry.restarts, 30_000);
    entry.restarts++;
    log.info("restarting service", { service: entry.def.id, reason, delayMs: delay, restarts: entry.restarts, elapsedMs: elapsed(entry) });
    entry.record.transition("Waiting", `Restarting service in ${delay} ms`);
    this.emit(entry.record);
    entry.timer = setTimeout(() => void this.launch(entry), delay);
    entry.timer.unref();
  }

  private emit(record: ServiceRecord): void {
    const status = record.status();
    for (const l of this.listeners) l(status);
  }
}

function elapsed(entry: Entry): number {
  return Date.now() - entry.launchedAt;
}
