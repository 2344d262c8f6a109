// Keepalive pings on a client HTTP/2 session, as grpc-js's channels send them: while calls are open,
// a ping `timeMs` after the last one was answered; one not answered within `timeoutMs` ends the
// session, so a node that went away fails its calls instead of holding them open.

import type { ClientHttp2Session, ClientHttp2Stream } from "node:http2";

export interface KeepalivePolicy {
  timeMs: number;
  timeoutMs: number;
}

/** The error a session is destroyed with when its peer stopped answering pings. */
export class KeepaliveTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`keepalive ping not answered within ${timeoutMs} ms`);
    this.name = "KeepaliveTimeoutError";
  }
}

export class SessionKeepalive {
  private open = 0;
  private timer: NodeJS.Timeout | undefined;
  /** A ping is in flight: the next one is scheduled once it is answered. */
  private pinging = false;

  constructor(
    private readonly session: ClientHttp2Session,
    private readonly policy: KeepalivePolicy,
  ) {
    session.once("close", () => clearTimeout(this.timer));
  }

  /** Counts `stream` as an open call until it closes. */
  track(stream: ClientHttp2Stream): void {
    this.open++;
    stream.once("close", () => {
      this.open--;
    });
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.pinging || this.open === 0 || this.session.destroyed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.ping();
    }, this.policy.timeMs);
    this.timer.unref();
  }

  private ping(): void {
    if (this.open === 0 || this.session.destroyed || this.session.closed) return;
    this.pinging = true;
    const deadline = setTimeout(
      () => this.session.destroy(new KeepaliveTimeoutError(this.policy.timeoutMs)),
      this.policy.timeoutMs,
    );
    deadline.unref();
    let done = false;
    const answered = (err: Error | null) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      this.pinging = false;
      if (err) this.session.destroy(err);
      else this.schedule();
    };
    try {
      if (!this.session.ping(answered)) answered(new Error("keepalive ping could not be sent"));
    } catch (err) {
      answered(err instanceof Error ? err : new Error(String(err)));
    }
  }
}
