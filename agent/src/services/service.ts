// Service model with Talos's states and event history, independent of how a
// service runs (process, container, or in-process).

import type { LogWriter } from "./logs.js";

export type ServiceState =
  | "Initialized"
  | "Starting"
  | "Waiting"
  | "Preparing"
  | "Running"
  | "Stopping"
  | "Finished"
  | "Failed"
  | "Skipped";

export interface ServiceHealth {
  unknown: boolean;
  healthy: boolean;
  lastMessage: string;
  lastChange: Date | undefined;
}

export interface ServiceEvent {
  msg: string;
  state: ServiceState;
  ts: Date;
  /** Set on a health change's event (Talos's events carry health only then). */
  health?: ServiceHealth;
}

export interface ServiceStatus {
  id: string;
  state: ServiceState;
  events: ServiceEvent[];
  health: ServiceHealth;
}

/** What the supervisor hands a runner for one run of its service. */
export interface RunContext {
  /** A writer into the service's log, one per output stream (each keeps its own unfinished line). */
  openOutput(): LogWriter;
  /** Puts a started process into the service's cgroup with its OOM score adjustment (runners that start processes call it). */
  placeProcess(pid: number): void;
  /** The service's cgroup (e.g. /system/apid), for runners that create the group themselves (a container's spec). */
  cgroup: string;
  oomScoreAdj: number | undefined;
}

/** What the supervisor needs from something it runs. */
export interface ServiceRunner {
  /**
   * Starts the service; resolves once it runs, optionally with the message of its Running event
   * (e.g. the PID). `onExit` fires when it stops by itself. `ctx` is always given by the supervisor.
   */
  start(onExit: (err: Error | undefined) => void, ctx?: RunContext): Promise<string | void>;
  /** Stops the service and resolves once it has stopped. */
  stop(): Promise<void>;
  /** Optional health probe; rejects when unhealthy. */
  health?(): Promise<void>;
  /** How Talos names the runner in restart events (e.g. `Process(["/bin/x"])`); unset: the service id. */
  describe?(): string;
}

/** Something a service waits for before it starts (Talos's service conditions). */
export interface Condition {
  /** What is awaited, for the service's Waiting event: e.g. `resource secrets/ApiCertificates(api) to exist`. */
  readonly description: string;
  /** Resolves once the condition holds; rejects with the signal's reason when it aborts first. */
  wait(signal: AbortSignal): Promise<void>;
}

/** Talos's restart policies: always (Forever), never (Once), untilSuccess. */
export type RestartPolicy = "always" | "never" | "untilSuccess";

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
  /** What happens after the service exits by itself (a restart follows Talos's fixed 5 s interval). */
  restart: RestartPolicy;
  /** The user and group it runs as (its runner starts it so); unset: as machined. */
  user?: { uid: number; gid: number };
  /** Its cgroup, as Talos names them (e.g. /podruntime/runtime); unset: /system/<id>. */
  cgroup?: string;
  /** Its processes' oom_score_adj (Talos: apid and trustd -998, containerd -999). */
  oomScoreAdj?: number;
  /** What ServiceStart/ServiceStop/ServiceRestart may do to it (Talos allows them per service; none by default). */
  api?: { start?: boolean; stop?: boolean; restart?: boolean };
}

/** Talos keeps this many events per service. */
export const maxServiceEvents = 64;

/** Tracks one service's state transitions and keeps the last events, as ServiceList reports them. */
export class ServiceRecord {
  state: ServiceState = "Initialized";
  readonly events: ServiceEvent[] = [];
  health: ServiceHealth = { unknown: true, healthy: false, lastMessage: "", lastChange: undefined };

  constructor(readonly id: string) {}

  transition(state: ServiceState, msg: string): ServiceEvent {
    this.state = state;
    return this.push({ msg, state, ts: new Date() });
  }

  /** Records a health result; returns the health event when it changed anything (as Talos, only while Running). */
  setHealth(healthy: boolean, message: string): ServiceEvent | undefined {
    if (!this.health.unknown && this.health.healthy === healthy && this.health.lastMessage === message)
      return undefined;
    this.health = { unknown: false, healthy, lastMessage: message, lastChange: new Date() };
    if (this.state !== "Running") return undefined;
    return this.push({
      msg: healthy ? "Health check successful" : `Health check failed: ${message}`,
      state: this.state,
      ts: new Date(),
      health: { ...this.health },
    });
  }

  /** Forgets the last run's health (a new run is unknown until probed). */
  resetHealth(): void {
    this.health = { unknown: true, healthy: false, lastMessage: "", lastChange: undefined };
  }

  status(): ServiceStatus {
    return { id: this.id, state: this.state, events: [...this.events], health: { ...this.health } };
  }

  private push(event: ServiceEvent): ServiceEvent {
    this.events.push(event);
    if (this.events.length > maxServiceEvents) this.events.splice(0, this.events.length - maxServiceEvents);
    return event;
  }
}
