import { timestamp } from "../resources/wire.js";
import type { ServiceStatus } from "../services/service.js";

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
      last_change: s.health.lastChange && timestamp(s.health.lastChange),
    },
  };
}

/** machine.ServiceListResponse: exactly one `messages` element, so apid can tag it in fan-out. */
export function serviceListResponse(statuses: ServiceStatus[]) {
  return { messages: [{ services: statuses.map(serviceInfo) }] };
}
