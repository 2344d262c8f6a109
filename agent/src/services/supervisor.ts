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
}

/**
 * Runs services, restarts them with capped exponential backoff, polls their
 * health, and reports every change to listeners (machined mirrors them into
 * Service resources and the Events stream). A run that stays up and healthy
 * for `stableRunMs` resets the backoff, so a crash after a long healthy run
 * is retried quickly again.
 */
export class Supervisor {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<ServiceListener>();

  constructor(
    private readonly healthIntervalMs = 5000,
    private readonly stableRunMs = 60_000,
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
      record, wanted: true, restarts: 0, timer: undefined, healthTimer: undefined, stableTimer: undefined,
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
        timer: undefined, healthTimer: undefined, stableTimer: undefined,
      };
      this.entries.set(def.id, entry);
    }
    entry.def = def;
    entry.wanted = true;
    await this.launch(entry);
  }

  async stop(id: string): Promise<void> {
    const entry = this.entries.get(id);
    if (!entry) return;
    entry.wanted = false;
    clearTimeout(entry.timer);
    clearInterval(entry.healthTimer);
    clearTimeout(entry.stableTimer);
    if (entry.record.state === "Running" || entry.record.state === "Preparing") {
      entry.record.transition("Stopping", "Stopping service");
      this.emit(entry.record);
      await entry.def.runner.stop().catch((err) => log.warn("stop failed", { service: id, error: describeError(err) }));
      entry.record.transition("Finished", "Service finished successfully");
      this.emit(entry.record);
    } else if (entry.record.state === "Waiting") {
      // The pending restart was cancelled above; do not keep announcing it.
      entry.record.transition("Finished", "Service stopped before its restart");
      this.emit(entry.record);
    }
  }

  async stopAll(): Promise<void> {
    for (const id of [...this.entries.keys()].reverse()) await this.stop(id);
  }

  private async launch(entry: Entry): Promise<void> {
    const { def, record } = entry;
    record.transition("Preparing", "Running pre state");
    this.emit(record);
    try {
      await def.runner.start((err) => this.exited(entry, err));
    } catch (err) {
      record.transition("Failed", `Failed to start: ${describeError(err)}`);
      this.emit(record);
      this.scheduleRestart(entry);
      return;
    }
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
          () => record.setHealth(true, ""),
          (err: unknown) => record.setHealth(false, describeError(err)),
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
    const msg = err ? `Error running service: ${describeError(err)}` : "Service exited";
    entry.record.transition(err ? "Failed" : "Finished", msg);
    this.emit(entry.record);
    log.warn("service exited", { service: entry.def.id, error: err ? describeError(err) : undefined });
    if (entry.def.restart === "always") this.scheduleRestart(entry);
  }

  private scheduleRestart(entry: Entry): void {
    if (!entry.wanted) return;
    const delay = Math.min(500 * 2 ** entry.restarts, 30_000);
    entry.restarts++;
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
