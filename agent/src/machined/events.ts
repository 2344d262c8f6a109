// The events behind MachineService.Events: what the sequences and the machine's stage
// did, kept in a bounded history so a client can ask for the tail, and pushed to
// every open stream. talosctl's --wait trackers follow them (and an actor id ties
// a sequence's events to the request that started it).

import { randomBytes } from "node:crypto";
import { encode } from "../api/index.js";
import { machineStages, type MachineStatusSpec } from "../resources/catalog/runtime.js";
import type { ServiceEvent, ServiceState, ServiceStatus } from "../services/service.js";
import { timestamp } from "../resources/wire.js";
import type { SequenceListener } from "./sequencer.js";

/** machine.ServiceStateEvent.Action by state (Talos's events.ServiceState order). */
const serviceActions: Record<ServiceState, number> = {
  Initialized: 0,
  Preparing: 1,
  Waiting: 2,
  Running: 3,
  Stopping: 4,
  Finished: 5,
  Failed: 6,
  Skipped: 7,
  Starting: 8,
};

export interface MachineEvent {
  readonly id: string;
  /** Milliseconds since the epoch. */
  readonly at: number;
  /** Full protobuf name of the payload, e.g. machine.TaskEvent. */
  readonly type: string;
  readonly payload: Buffer;
  readonly actorId: string;
}

/**
 * An event as published: its payload is encoded when a follower first reads it. Most of a boot's events are never
 * read, and encoding each as it was published took CPU from machined's start.
 */
class PublishedEvent implements MachineEvent {
  private encoded: Buffer | undefined;

  constructor(
    readonly id: string,
    readonly at: number,
    readonly type: string,
    private readonly body: object,
    readonly actorId: string,
  ) {}

  get payload(): Buffer {
    return (this.encoded ??= encode(this.type, this.body));
  }
}

const historySize = 1000;

let counter = randomBytes(3).readUIntBE(0, 3);
/** Sortable ids: time first, then a counter, as Talos's xids sort. */
function eventId(at: number): string {
  counter = (counter + 1) & 0xffffff;
  return `${at.toString(36).padStart(9, "0")}${counter.toString(36).padStart(5, "0")}${randomBytes(3).toString("hex")}`;
}

export interface TailOptions {
  tailEvents?: number;
  tailId?: string;
  tailSeconds?: number;
}

/**
 * Published events: the last `historySize` are kept, each at an absolute position (0 for the
 * first ever published), so a follower reads from where it is at its own pace; one that falls
 * more than the history behind has lost events, as Talos's ring buffer overrun.
 */
export class EventBus {
  private readonly history: MachineEvent[] = [];
  /** The position of history[0]. */
  private first = 0;
  private waiters: (() => void)[] = [];

  publish(type: string, payload: object, actorId = ""): void {
    const at = Date.now();
    const event = new PublishedEvent(eventId(at), at, type, payload, actorId);
    this.history.push(event);
    if (this.history.length > historySize) {
      const drop = this.history.length - historySize;
      this.history.splice(0, drop);
      this.first += drop;
    }
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** The position after the last event published. */
  get end(): number {
    return this.first + this.history.length;
  }

  /** Where a follower starts, as EventsRequest selects (tail_events -1: all kept; tail_id: after it; none: new events only). */
  position(opts: TailOptions): number {
    if (opts.tailId) {
      const i = this.history.findIndex((e) => e.id === opts.tailId);
      return i >= 0 ? this.first + i + 1 : this.first;
    }
    if (opts.tailSeconds && opts.tailSeconds > 0) {
      const since = Date.now() - opts.tailSeconds * 1000;
      const i = this.history.findIndex((e) => e.at >= since);
      return i >= 0 ? this.first + i : this.end;
    }
    const n = opts.tailEvents ?? 0;
    if (n < 0) return this.first;
    return Math.max(this.first, this.end - n);
  }

  /** The events from `position` on; undefined when some of them are no longer kept (the follower fell behind). */
  from(position: number): MachineEvent[] | undefined {
    if (position < this.first) return undefined;
    return this.history.slice(position - this.first);
  }

  /** Events already published, as EventsRequest selects them. */
  backlog(opts: TailOptions): MachineEvent[] {
    return this.from(this.position(opts)) ?? [];
  }

  /** Resolves at the next publish, or when `signal` aborts. */
  next(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener("abort", done);
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve();
      };
      this.waiters.push(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /** Sequence, phase and task events of one sequence run, tagged with the actor that asked for it. */
  sequenceListener(actorId: string): SequenceListener {
    return (e) => {
      const action = e.action === "start" ? 0 : 1;
      if (e.task) this.publish("machine.TaskEvent", { task: e.task, action }, actorId);
      else if (e.phase) this.publish("machine.PhaseEvent", { phase: e.phase, action }, actorId);
      // SequenceEvent.Action: NOOP 0, START 1, STOP 2.
      else
        this.publish(
          "machine.SequenceEvent",
          { sequence: e.sequence, action: action + 1, ...(e.error ? { error: { message: e.error } } : {}) },
          actorId,
        );
    };
  }

  /** One ServiceStateEvent per service event; health is known only on a health event's (as Talos's). */
  serviceState(status: ServiceStatus, event: ServiceEvent): void {
    const h = event.health;
    this.publish("machine.ServiceStateEvent", {
      service: status.id,
      action: serviceActions[event.state],
      message: event.msg,
      health: h
        ? {
            unknown: h.unknown,
            healthy: h.healthy,
            last_message: h.lastMessage,
            last_change: h.lastChange && timestamp(h.lastChange),
          }
        : { unknown: true },
    });
  }

  machineStatus(spec: MachineStatusSpec): void {
    this.publish("machine.MachineStatusEvent", {
      stage: machineStages[spec.stage],
      status: {
        ready: spec.status.ready,
        unmet_conditions: spec.status.unmetConditions.map((c) => ({ name: c.name, reason: c.reason })),
      },
    });
  }
}
