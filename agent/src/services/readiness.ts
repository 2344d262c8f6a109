import net from "node:net";
import { SystemError } from "../errors.js";
import { splitHostPort } from "../sys/host-port.js";

/**
 * Polls `probe` until it succeeds. There is no deadline: a slow start (a loaded
 * host, a service waiting for its certificates) is not a failure. The wait ends
 * only when `signal` aborts (the runner saw the service exit, or it is being
 * stopped), rejecting with the last probe error.
 */
export async function pollUntilReady(probe: () => Promise<void>, signal: AbortSignal, intervalMs = 100): Promise<void> {
  for (;;) {
    try {
      return await probe();
    } catch (err) {
      if (signal.aborted) throw err;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, intervalMs);
        function done() {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          resolve();
        }
        signal.addEventListener("abort", done, { once: true });
      });
      if (signal.aborted) throw err;
    }
  }
}

/** Resolves when a TCP listener at `listen` (host:port, [v6]:port) accepts a connection. */
export function tcpProbe(listen: string, what = "service"): Promise<void> {
  const { host, port } = splitHostPort(listen);
  return new Promise((resolve, reject) => {
    // A wildcard listener is probed on loopback.
    const sock = net.connect({
      host: host === "0.0.0.0" || host === "" ? "127.0.0.1" : host === "::" ? "::1" : host,
      port,
    });
    sock.setTimeout(2000);
    sock.once("connect", () => {
      // With nothing listening, a loopback connect whose ephemeral port happens to be the
      // probed one connects to itself (TCP simultaneous open): that is no listener.
      const self = sock.localPort === sock.remotePort && sock.localAddress === sock.remoteAddress;
      sock.destroy();
      if (self) reject(new SystemError(`${what} is not listening on ${listen} (the probe connected to itself)`));
      else resolve();
    });
    sock.once("timeout", () => {
      sock.destroy();
      reject(new SystemError(`${what} is not listening on ${listen}`));
    });
    sock.once("error", (err) => reject(new SystemError(`${what} is not listening on ${listen}`, {}, { cause: err })));
  });
}
