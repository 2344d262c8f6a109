import type * as grpc from "@grpc/grpc-js";
import type { EventBus, MachineEvent } from "../events.js";

export interface EventsRequest {
  tail_events?: number;
  tail_id?: string;
  tail_seconds?: number;
  with_actor_id?: string;
}

function message(e: MachineEvent) {
  return { data: { type_url: `talos/runtime/${e.type}`, value: e.payload }, id: e.id, actor_id: e.actorId };
}

/** Streams the requested backlog, then every new event, until the client goes away. */
export async function streamEvents(bus: EventBus, call: grpc.ServerWritableStream<EventsRequest, unknown>): Promise<void> {
  const req = call.request;
  const wanted = (e: MachineEvent) => !req.with_actor_id || e.actorId === req.with_actor_id;
  await new Promise<void>((resolve) => {
    const unsubscribe = bus.subscribe((e) => {
      if (wanted(e)) call.write(message(e));
    });
    const end = () => {
      unsubscribe();
      resolve();
    };
    call.once("cancelled", end);
    call.once("close", end);
    for (const e of bus.backlog({ tailEvents: req.tail_events ?? 0, ...(req.tail_id ? { tailId: req.tail_id } : {}), ...(req.tail_seconds ? { tailSeconds: req.tail_seconds } : {}) })) {
      if (wanted(e)) call.write(message(e));
    }
  });
}
