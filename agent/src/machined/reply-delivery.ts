// machined's half of the reply-delivery handshake (grpc/reply-delivery.ts): an apply that
// came through apid holds the network's kernel changes until apid reports its reply left.

import * as grpc from "@grpc/grpc-js";
import type { NetworkChangeHold } from "../controllers/network/change-hold.js";
import { replyDeliveredPath, replyDeliveryKey } from "../grpc/reply-delivery.js";
import { logger } from "../log.js";

const log = logger("machined");
const identity = (b: Buffer): Buffer => b;

/** How long a reply may take to leave before the network changes anyway (apid gone, a stuck caller). */
export const replyDeliveryMaxMs = 10_000;

export class ReplyDeliveries {
  private readonly waiting = new Map<string, () => void>();

  constructor(
    /** Absent where machined does not change the network (the sandbox observing its host). */
    private readonly hold: NetworkChangeHold | undefined,
    private readonly maxMs = replyDeliveryMaxMs,
  ) {}

  /** Holds the network's kernel changes until the reply of the call `metadata` came with has left; no token, no hold. */
  expect(metadata: grpc.Metadata): void {
    const token = metadata.get(replyDeliveryKey)[0];
    if (!this.hold || typeof token !== "string" || token === "" || this.waiting.has(token)) return;
    const release = this.hold.hold(this.maxMs, () => {
      this.waiting.delete(token);
      log.warn("an apply's reply did not report its delivery: the network changes now", { waitedMs: this.maxMs });
    });
    this.waiting.set(token, () => {
      this.waiting.delete(token);
      release();
    });
  }

  /** apid reported the reply with `token` left (unknown tokens: another node's, or expired). */
  delivered(token: string): void {
    this.waiting.get(token)?.();
  }

  /** Serves apid's report on machined's socket. */
  register(server: grpc.Server): void {
    const handler: grpc.handleUnaryCall<Buffer, Buffer> = (call, callback) => {
      this.delivered(call.request.toString("utf8"));
      callback(null, Buffer.alloc(0));
    };
    server.register(replyDeliveredPath, handler, identity, identity, "unary");
  }
}
