// Service model with Talos's states and event history, independent of how a
// service runs (process, container, or in-process).

export type ServiceState = "Initialized" | "Waiting" | "Preparing" | "Pre" | "Running" | "Stopping" | "Finished" | "Failed" | "Skipped";

export interface ServiceEvent {
  msg: string;
  state: ServiceState;
  ts: Date;
}

export interface ServiceHealth {
  unknown: boolean;
  healthy: boolean;
  lastMessage: string;
  lastChange: Date | undefined;
}

export interface ServiceStatus {
  id: string;
  state: ServiceState;
  events: ServiceEvent[];
  health: ServiceHealth;
}

/** What the supervisor needs from something it runs. */
export interface ServiceRunner {
  /** Starts the service; resolves once it runs. `onExit` fires when it stops by itself. */
  start(onExit: (err: Error | undefined) => void): Promise<void>;
  /** Stops the service and resolves once it has stopped. */
  stop(): Promise<void>;
  /** Optional health probe; rejects when unhealthy. */
  health?(): Promise<void>;
}

/** Something a service waits for before it starts (Talos's service conditions). */
export interface Condition {
  /** What is awaited, for the service's Waiting event: e.g. `resource secrets/ApiCertificates(api) to exist`. */
  readonly description: string;
  /** Resolves once the condition holds; rejects with the signal's reason when it aborts first. */
  wait(signal: AbortSignal): Promise<void>;
}

export interface ServiceDefinition {
  id: string;
  /** Services that must be Running before this one starts. */
  dependsOn?: string[];
  /** Conditions that must hold before this one starts. */
  conditions?: Condition[];
  /** Runs after the wait, before the runner starts (a failure is a failed start). */
  pre?(): Promise<void>;
  /** Runs once the service has stopped. */
  post?(): Promise<void>;
  runner: ServiceRunner;
  /** Restart after an exit, with backoff: always, never, or only after a failure (untilSuccess). */
  restart: "always" | "never" | "untilSuccess";
  /** The user and group it runs as (its runner starts it so); unset: as machined. */
  user?: { uid: number; gid: number };
}

const maxEvents = 32;

/** Tracks one service's state transitions and keeps the last events, as ServiceList reports them. */
export class ServiceRecord {
  state: ServiceState = "Initialized";
  readonly events: ServiceEvent[] = [];
  health: ServiceHealth = { unknown: true, healthy: false, lastMessage: "", lastChange: undefined };

  constructor(readonly id: string) {}

  transition(state: ServiceState, msg: string): void {
    this.state = state;
    this.events.push({ msg, state, ts: new Date() });
    if (this.events.length > maxEvents) this.events.splice(0, this.events.length - maxEvents);
  }

  setHealth(healthy: boolean, message: string): void {
    if (!this.health.unknown && this.health.healthy === healthy && this.health.lastMessage === message) return;
    this.health = { unknown: false, healthy, lastMessage: message, lastChange: new Date() };
  }

  status(): ServiceStatus {
    return { id: this.id, state: this.state, events: [...this.events], health: { ...this.health } };
  }
}
