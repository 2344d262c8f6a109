import type * as grpc from "@grpc/grpc-js";
import type { EventBus, MachineEvent } from "../events.js";
import { cancellation, send } from "./stream.js";

export interface EventsRequest {
  tail_events?: number;
  tail_id?: string;
  tail_seconds?: number;
  with_actor_id?: string;
}

function message(e: MachineEvent) {
  return { data: { type_url: `talos/runtime/${e.type}`, value: e.payload }, id: e.id, actor_id: e.actorId };
}

/**
 * Streams the requested backlog, then every new event, until the client goes away. Each write
 * waits for the stream to drain: a slow follower keeps only its position in the bus's bounded
 * history; one that falls behind the history has its stream ended, as Talos ends the watch.
 */
export async function streamEvents(
  bus: EventBus,
  call: grpc.ServerWritableStream<EventsRequest, unknown>,
): Promise<void> {
  const req = call.request;
  const wanted = (e: MachineEvent) => !req.with_actor_id || e.actorId === req.with_actor_id;
  const { signal, dispose } = cancellation(call);
  // Ends the wait for new events when the client cancels or the stream closes.
  const ac = new AbortController();
  const closed = () => ac.abort();
  signal.addEventListener("abort", closed, { once: true });
  call.once("close", closed);
  try {
    let position = bus.position({
      tailEvents: req.tail_events ?? 0,
      ...(req.tail_id ? { tailId: req.tail_id } : {}),
      ...(req.tail_seconds ? { tailSeconds: req.tail_seconds } : {}),
    });
    while (!ac.signal.aborted) {
      const events = bus.from(position);
      if (events === undefined) {
        call.end();
        return;
      }
      if (events.length === 0) {
        await bus.next(ac.signal);
        continue;
      }
      for (const e of events) {
        position++;
        if (wanted(e) && !(await send(call, message(e)))) return;
      }
    }
  } finally {
    dispose();
    call.off("close", closed);
  }
}
