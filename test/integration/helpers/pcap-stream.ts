// A PacketCapture stream read as its libpcap bytes arrive: the global header, then each record.
import type * as grpc from "@grpc/grpc-js";
import type { NodeClient } from "../../../agent/src/client/client.js";

export interface PcapRecord {
  /** The frame's length on the wire. */
  length: number;
  /** The bytes captured (at most the snap length). */
  data: Buffer;
}

/** Starts a capture; `until(pred)` resolves once the records so far satisfy `pred` (or the stream failed). */
export function startCapture(client: NodeClient, request: object) {
  const stream: grpc.ClientReadableStream<{ bytes: Buffer }> = client.machine.PacketCapture(request, client.metadata());
  let pending = Buffer.alloc(0);
  let header: Buffer | undefined;
  const records: PcapRecord[] = [];
  const waiters: { pred: () => boolean; resolve: () => void }[] = [];
  let failed = false;
  const wake = () => {
    for (const w of waiters.splice(0)) {
      if (failed || w.pred()) w.resolve();
      else waiters.push(w);
    }
  };
  stream.on("data", (m: { bytes: Buffer }) => {
    pending = Buffer.concat([pending, m.bytes]);
    if (!header && pending.length >= 24) {
      header = pending.subarray(0, 24);
      pending = pending.subarray(24);
    }
    while (header && pending.length >= 16 && pending.length >= 16 + pending.readUInt32LE(8)) {
      const captured = pending.readUInt32LE(8);
      records.push({ length: pending.readUInt32LE(12), data: Buffer.from(pending.subarray(16, 16 + captured)) });
      pending = pending.subarray(16 + captured);
    }
    wake();
  });
  const ended = new Promise<grpc.ServiceError | undefined>((resolve) => {
    stream.on("error", (err: grpc.ServiceError) => {
      failed = true;
      wake();
      resolve(err);
    });
    stream.on("end", () => resolve(undefined));
  });
  const until = (pred: () => boolean) =>
    new Promise<void>((resolve) => {
      waiters.push({ pred, resolve });
      wake();
    });
  return { stream, records, header: () => header, until, ended };
}
