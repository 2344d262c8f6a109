// One SNTP exchange over UDP: send a request stamped with the local clock, take the
// first reply from that server that answers it, measure against the local clock.

import dgram from "node:dgram";
import { isIP } from "node:net";
import { SystemError } from "../../errors.js";
import type { SystemClock } from "../../sys/clock.js";
import { NTP_PORT, decodeReply, encodeRequest, measure, NtpReplyMismatchError, type NtpMeasurement } from "./packet.js";

export class NtpQueryError extends SystemError {}

export interface NtpQueryOptions {
  /** Default 5 s (Talos's NTP library's default). */
  timeoutMs?: number;
  port?: number;
  signal?: AbortSignal;
}

/** Queries the server at IP address `address`; throws NtpQueryError (timeout, network) or NtpResponseError (bad reply). */
export function queryNtp(
  address: string,
  clock: Pick<SystemClock, "now">,
  opts: NtpQueryOptions = {},
): Promise<NtpMeasurement> {
  const family = isIP(address);
  if (family === 0)
    return Promise.reject(new NtpQueryError(`not an IP address: ${JSON.stringify(address)}`, { server: address }));
  const port = opts.port ?? NTP_PORT;
  const timeoutMs = opts.timeoutMs ?? 5000;
  return new Promise<NtpMeasurement>((resolve, reject) => {
    const socket = dgram.createSocket(family === 6 ? "udp6" : "udp4");
    let sentMs = 0;
    let request: Buffer | undefined;
    let lastRejection: unknown;
    let settled = false;
    // Once only: a send callback may still come after the timeout closed the socket, and a second close throws.
    const finish = (err: unknown, result?: NtpMeasurement) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", aborted);
      socket.close();
      if (err) reject(err);
      else resolve(result!);
    };
    const aborted = () =>
      finish(new NtpQueryError(`NTP query to ${address} aborted`, { server: address }, { cause: opts.signal?.reason }));
    const timer = setTimeout(() => {
      const why = lastRejection ? { cause: lastRejection } : undefined;
      finish(new NtpQueryError(`NTP query to ${address} timed out after ${timeoutMs} ms`, { server: address }, why));
    }, timeoutMs);
    if (opts.signal?.aborted) return aborted();
    opts.signal?.addEventListener("abort", aborted, { once: true });
    socket.on("error", (err) =>
      finish(new NtpQueryError(`NTP query to ${address} failed`, { server: address }, { cause: err })),
    );
    socket.on("message", (msg, rinfo) => {
      const receivedMs = clock.now();
      if (!request || rinfo.address !== address) return;
      try {
        finish(undefined, measure(decodeReply(msg), request, sentMs, receivedMs));
      } catch (err) {
        // A reply for an earlier request, or one that fails the checks: a later one may still come.
        if (!(err instanceof NtpReplyMismatchError)) return finish(err);
        lastRejection = err;
      }
    });
    sentMs = clock.now();
    request = encodeRequest(sentMs);
    socket.send(request, port, address, (err) => {
      if (err) finish(new NtpQueryError(`NTP query to ${address} not sent`, { server: address }, { cause: err }));
    });
  });
}
