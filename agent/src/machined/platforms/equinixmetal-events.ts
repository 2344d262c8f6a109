// Equinix Metal's events endpoint, as Talos v1.7 posts to it: the URL is the kernel argument
// em.events_url (Equinix Metal injects it per device), the body {"type","msg"} as Go's
// encoding/json writes it, the failure's error appended to the message. A POST is sent again
// every second while the endpoint cannot be reached; an answer of any status ends it (Talos
// reads no status), though one other than 2xx is reported here so the caller can log it.

import { describeError, SystemError } from "../../errors.js";
import type { PlatformEvent, PlatformEventIo } from "./platform.js";
import { retryWhileUnreachable } from "./retry.js";

export const equinixMetalEventsArg = "em.events_url";

/** The kernel has no em.events_url: there is nowhere to send events (Talos's ErrNoEventURL). */
export class NoEventUrlError extends SystemError {}

/** The events endpoint answered a status other than 2xx; the event is not sent again. */
export class EventRejectedError extends SystemError {}

/** Go's encoding/json escapes these inside strings (HTML-safe output); JSON.stringify does not. */
const goEscaped = /[<>&\u2028\u2029]/g;

/** The POST's body, byte for byte as Talos marshals its Event. */
export function equinixMetalEventBody(event: PlatformEvent): string {
  const msg = event.error === undefined ? event.message : `${event.message}: ${event.error}`;
  return JSON.stringify({ type: event.type, msg }).replace(
    goEscaped,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

export async function sendEquinixMetalEvent(event: PlatformEvent, io: PlatformEventIo): Promise<void> {
  const url = io.cmdline.get(equinixMetalEventsArg)?.[0];
  if (url === undefined) throw new NoEventUrlError("no event URL", { arg: equinixMetalEventsArg });
  const body = equinixMetalEventBody(event);
  const reply = await retryWhileUnreachable(
    () => io.http.request(url, { method: "POST", body }),
    io.retry,
    io.signal,
    (attempt, delayMs, err) =>
      io.log.info("event endpoint unreachable; retrying", { url, attempt, delayMs, error: describeError(err) }),
  );
  if (reply.status < 200 || reply.status > 299)
    throw new EventRejectedError(`POST ${url}: status ${reply.status}`, { url, status: reply.status });
}
