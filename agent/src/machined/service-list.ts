import type { ServiceStatus } from "../services/service.js";

/** google.protobuf.Timestamp as a plain object. */
export function timestamp(d: Date | undefined): { seconds: number; nanos: number } | undefined {
  if (!d) return undefined;
  const ms = d.getTime();
  return { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 };
}

/** One machine.ServiceInfo from a supervised service's status. */
export function serviceInfo(s: ServiceStatus) {
  return {
    id: s.id,
    state: s.state,
    events: { events: s.events.map((e) => ({ msg: e.msg, state: e.state, ts: timestamp(e.ts) })) },
    health: {
      unknown: s.health.unknown,
      healthy: s.health.healthy,
      last_message: s.health.lastMessage,
      last_change: timestamp(s.health.lastChange),
    },
  };
}

/** machine.ServiceListResponse: exactly one `messages` element, so apid can tag it in fan-out. */
export function serviceListResponse(statuses: ServiceStatus[]) {
  return { messages: [{ services: statuses.map(serviceInfo) }] };
}
