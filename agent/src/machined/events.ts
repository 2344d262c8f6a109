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
  Initialized: 0, Preparing: 1, Waiting: 2, Running: 3, Stopping: 4, Finished: 5, Failed: 6, Skipped: 7, Starting: 8,
};

export interface MachineEvent {
  id: string;
  /** Milliseconds since the epoch. */
  at: number;
  /** Full protobuf name of the payload, e.g. machine.TaskEvent. */
  type: string;
  payload: Buffer;
  actorId: string;
}

export type EventListener = (event: MachineEvent) => void;

const historySize = 1000;

let counter = randomBytes(3).readUIntBE(0, 3);
/** Sortable ids: time first, then a counter, as Talos's xids sort. */
function eventId(at: number): string {
  counter = (counter + 1) & 0xffffff;
  return `${at.toString(36).padStart(9, "0")}${counter.toString(36).padStart(5, "0")}${randomBytes(3).toString("hex")}`;
}

export class EventBus {
  private readonly history: MachineEvent[] = [];
  private readonly listeners = new Set<EventListener>();

  publish(type: string, payload: object, actorId = ""): void {
    const at = Date.now();
    const event: MachineEvent = { id: eventId(at), at, type, payload: encode(type, payload), actorId };
    this.history.push(event);
    if (this.history.length > historySize) this.history.splice(0, this.history.length - historySize);
    for (const l of this.listeners) l(event);
  }

  /** Events already published, as EventsRequest selects them (tail_events -1: all; tail_id: those after it). */
  backlog(opts: { tailEvents?: number; tailId?: string; tailSeconds?: number }): MachineEvent[] {
    if (opts.tailId) {
      const i = this.history.findIndex((e) => e.id === opts.tailId);
      return i >= 0 ? this.history.slice(i + 1) : [...this.history];
    }
    if (opts.tailSeconds && opts.tailSeconds > 0) {
      const since = Date.now() - opts.tailSeconds * 1000;
      return this.history.filter((e) => e.at >= since);
    }
    const n = opts.tailEvents ?? 0;
    if (n < 0) return [...this.history];
    return n === 0 ? [] : this.history.slice(-n);
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Sequence, phase and task events of one sequence run, tagged with the actor that asked for it. */
  sequenceListener(actorId: string): SequenceListener {
    return (e) => {
      const action = e.action === "start" ? 0 : 1;
      if (e.task) this.publish("machine.TaskEvent", { task: e.task, action }, actorId);
      else if (e.phase) this.publish("machine.PhaseEvent", { phase: e.phase, action }, actorId);
      // SequenceEvent.Action: NOOP 0, START 1, STOP 2.
      else this.publish("machine.SequenceEvent", { sequence: e.sequence, action: action + 1, ...(e.error ? { error: { message: e.error } } : {}) }, actorId);
    };
  }

  /** One ServiceStateEvent per service event; health is known only on a health event's (as Talos's). */
  serviceState(status: ServiceStatus, event: ServiceEvent): void {
    const h = event.health;
    this.publish("machine.ServiceStateEvent", {
      service: status.id,
      action: serviceActions[event.state],
      message: event.msg,
      health: h ? { unknown: h.unknown, healthy: h.healthy, last_message: h.lastMessage, last_change: h.lastChange && timestamp(h.lastChange) } : { unknown: true },
    });
  }

  machineStatus(spec: MachineStatusSpec): void {
    this.publish("machine.MachineStatusEvent", {
      stage: machineStages[spec.stage],
      status: { ready: spec.status.ready, unmet_conditions: spec.status.unmetConditions.map((c) => ({ name: c.name, reason: c.reason })) },
    });
  }
}
