// A backend session: one HTTP/2 session to machined's socket or to another node's apid,
// opened on first use and again after it closed, kept alive while calls are open and closed
// when idle. Every route of a call ends on one (raw-relay.ts, frame-stream.ts).

import http2, { type ClientHttp2Session, type ClientHttp2Stream, type OutgoingHttpHeaders } from "node:http2";
import type { Duplex } from "node:stream";
import { describeError } from "../errors.js";
import { logger } from "../log.js";
import { SessionKeepalive, type KeepalivePolicy } from "./session-keepalive.js";

const log = logger("apid");

/** A call on a backend session that was closed for good (apid stopping, or a new forwarding identity). */
export class BackendClosedError extends Error {
  constructor(backendName: string) {
    super(`the session to ${backendName} was closed`);
    this.name = "BackendClosedError";
  }
}

/** How a backend session is reached and kept. */
export interface BackendSessionOptions {
  /** The session's authority (scheme, host and port): `:authority` and `:scheme` of its requests. Default http://localhost. */
  authority?: string;
  /** Keepalive pings while calls are open, as grpc-js's channels send them; none when absent. */
  keepalive?: KeepalivePolicy;
  /** Receive windows in bytes, per stream and for the whole session; Node's (64 KiB) when absent. */
  windows?: { stream: number; session: number };
  /** A session with no call open this long is closed, and the next call opens another (grpc-go's idle timeout); kept open when absent. */
  idleTimeoutMs?: number;
  /** How long connecting (TLS included) may take before the session fails, as grpc-js's channels bound it; unbounded when absent. */
  connectTimeoutMs?: number;
}

/** A session whose connection was not established in time (a peer that accepts and never answers). */
export class ConnectTimeoutError extends Error {
  constructor(backendName: string, timeoutMs: number) {
    super(`no connection to ${backendName} established within ${timeoutMs} ms`);
    this.name = "ConnectTimeoutError";
  }
}

/** One HTTP/2 session to a backend, opened on first use and again after it closed. */
export class BackendSession {
  private session: ClientHttp2Session | undefined;
  private keepalive: SessionKeepalive | undefined;
  private closed = false;
  /** Calls open on the current session, and the timer that closes it once there are none. */
  private openCalls = 0;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly name: string,
    private readonly connect: () => Duplex,
    private readonly options: BackendSessionOptions = {},
  ) {}

  private get(): ClientHttp2Session {
    if (this.closed) throw new BackendClosedError(this.name);
    const current = this.session;
    if (current && !current.closed && !current.destroyed) return current;
    // As grpc-js's server does: large replies (Read, support bundles) must not hit nghttp2's session memory cap.
    const windows = this.options.windows;
    const s = http2.connect(this.options.authority ?? "http://localhost", {
      createConnection: this.connect,
      maxSessionMemory: Number.MAX_SAFE_INTEGER,
      ...(windows ? { settings: { initialWindowSize: windows.stream } } : {}),
    });
    if (windows) s.once("connect", () => s.setLocalWindowSize(windows.session));
    s.on("error", (err) => log.warn("backend session failed", { backend: this.name, error: describeError(err) }));
    s.on("close", () => {
      if (this.session === s) {
        this.session = undefined;
        this.keepalive = undefined;
      }
    });
    // An idle session must not keep apid alive once everything else has stopped.
    s.unref();
    this.session = s;
    this.openCalls = 0;
    this.closeWhenIdle(s);
    this.keepalive = this.options.keepalive ? new SessionKeepalive(s, this.options.keepalive) : undefined;
    const connectTimeoutMs = this.options.connectTimeoutMs;
    if (connectTimeoutMs !== undefined) {
      const timer = setTimeout(() => {
        if (s.connecting) s.destroy(new ConnectTimeoutError(this.name, connectTimeoutMs));
      }, connectTimeoutMs);
      timer.unref();
      s.once("connect", () => clearTimeout(timer));
      s.once("close", () => clearTimeout(timer));
    }
    return s;
  }

  /** Opens a stream on the session (opening the session first if need be); throws when it cannot. */
  request(headers: OutgoingHttpHeaders): ClientHttp2Stream {
    const s = this.get();
    const stream = s.request(headers);
    this.keepalive?.track(stream);
    this.openCalls += 1;
    clearTimeout(this.idleTimer);
    stream.once("close", () => {
      if (this.session !== s) return;
      this.openCalls -= 1;
      if (this.openCalls === 0) this.closeWhenIdle(s);
    });
    return stream;
  }

  private closeWhenIdle(s: ClientHttp2Session): void {
    const ms = this.options.idleTimeoutMs;
    if (ms === undefined) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.session === s && this.openCalls === 0) s.close();
    }, ms);
    this.idleTimer.unref();
  }

  /**
   * Resolves once the session is connected (opening it if need be), rejects when it fails first or
   * `timeoutMs` passes: a dead backend must not hold a caller longer than that.
   */
  ready(timeoutMs: number): Promise<void> {
    let s: ClientHttp2Session;
    try {
      s = this.get();
    } catch (err) {
      return Promise.reject(err);
    }
    if (!s.connecting) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const settle = (err?: Error) => {
        clearTimeout(timer);
        s.removeListener("connect", onConnect);
        s.removeListener("error", onError);
        s.removeListener("close", onClose);
        if (err) reject(err);
        else resolve();
      };
      const onConnect = () => settle();
      const onError = (err: Error) => settle(err);
      const onClose = () => settle(new Error("connection closed"));
      const timer = setTimeout(() => settle(new Error(`not connected within ${timeoutMs} ms`)), timeoutMs);
      s.once("connect", onConnect);
      s.once("error", onError);
      s.once("close", onClose);
    });
  }

  /** Lets calls in flight finish and refuses new ones: a session closed for a new identity must not open again. */
  close(): void {
    this.closed = true;
    clearTimeout(this.idleTimer);
    this.session?.close();
    this.session = undefined;
    this.keepalive = undefined;
  }
}
