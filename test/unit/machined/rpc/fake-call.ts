// A server-stream call as grpc-js hands it to a handler, enough for the read handlers:
// records what is written, can refuse writes (back-pressure) and can be cancelled.
import type * as grpc from "@grpc/grpc-js";
import { EventEmitter } from "node:events";

export class FakeCall<Req> extends EventEmitter {
  cancelled = false;
  ended = false;
  readonly written: unknown[] = [];
  /** When set, write() reports a full buffer and the handler must wait for "drain". */
  full = false;
  /** Called after each write, to cancel or fill up mid-stream. */
  onWrite: (n: number) => void = () => undefined;

  constructor(readonly request: Req) {
    super();
  }

  write(msg: unknown): boolean {
    this.written.push(msg);
    this.onWrite(this.written.length);
    return !this.full;
  }

  end(): void {
    this.ended = true;
  }

  cancel(): void {
    this.cancelled = true;
    this.emit("cancelled", "cancelled");
  }

  /** Listeners the handler left behind on this call. */
  leftover(): number {
    return ["cancelled", "drain", "close"].reduce((n, e) => n + this.listenerCount(e), 0);
  }

  // The handlers take grpc-js's stream type; this fake implements the part they use.
  asStream(): grpc.ServerWritableStream<Req, unknown> {
    return this as unknown as grpc.ServerWritableStream<Req, unknown>;
  }
}
