import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidInputError, NotFoundError, SystemError } from "../../../../agent/src/errors.js";
import {
  capturePlan,
  streamPacketCapture,
  type PacketCaptureRequest,
} from "../../../../agent/src/machined/rpc/packet-capture.js";
import {
  PacketCaptureSetupError,
  type CapturedPacket,
  type CaptureRequest,
  type PacketCapture,
  type PacketCaptureSource,
} from "../../../../agent/src/sys/packet-capture.js";
import { FakeCall } from "./fake-call.js";

const links: Record<string, { index: number; type: string }> = {
  eth0: { index: 2, type: "ether" },
  lo: { index: 1, type: "loopback" },
  kubespan: { index: 7, type: "nohdr" },
  sit0: { index: 9, type: "sit" },
};
const link = (name: string) => links[name];

/** A capture that hands out the packets pushed into it until it is closed. */
class FakeCapture implements PacketCapture {
  closed = 0;
  private queue: CapturedPacket[] = [];
  private wake: (() => void) | undefined;

  push(p: CapturedPacket): void {
    this.queue.push(p);
    this.wake?.();
  }

  async *packets(): AsyncIterable<CapturedPacket> {
    for (;;) {
      while (this.queue.length > 0) yield this.queue.shift()!;
      if (this.closed > 0) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  async close(): Promise<void> {
    this.closed++;
    this.wake?.();
  }
}

function fakeSource(capture: FakeCapture, fail?: Error): PacketCaptureSource & { opened: CaptureRequest[] } {
  const opened: CaptureRequest[] = [];
  return {
    opened,
    open(req) {
      opened.push(req);
      if (fail) throw fail;
      return capture;
    },
  };
}

const packet = (n: number): CapturedPacket => ({
  timestampNs: 1_700_000_000_000_000_000n + BigInt(n),
  length: 60 + n,
  data: Buffer.alloc(10 + n, n),
});

test("capture plan: link index and type, Talos's default snap length, the filter as given", () => {
  const plan = capturePlan(
    {
      interface: "eth0",
      promiscuous: true,
      bpf_filter: [
        { op: 0x28, k: 12 },
        { op: 0x6, k: 0x40000 },
      ],
    },
    link,
  );
  assert.deepEqual(plan, {
    ifindex: 2,
    linkType: 1,
    snapLength: 4096,
    promiscuous: true,
    filter: [
      { op: 0x28, jt: 0, jf: 0, k: 12 },
      { op: 0x6, jt: 0, jf: 0, k: 0x40000 },
    ],
  });
  assert.equal(capturePlan({ interface: "lo", snap_len: 128 }, link).linkType, 1);
  assert.equal(capturePlan({ interface: "lo", snap_len: 128 }, link).snapLength, 128);
  assert.equal(capturePlan({ interface: "kubespan" }, link).linkType, 101);
});

test("capture plan: unknown links (and 'any') are NotFound, other link types and bad fields InvalidArgument", () => {
  assert.throws(
    () => capturePlan({ interface: "any" }, link),
    (e: unknown) => e instanceof NotFoundError && e.message === 'interface "any" not found',
  );
  assert.throws(
    () => capturePlan({}, link),
    (e: unknown) => e instanceof NotFoundError && e.message === 'interface "" not found',
  );
  assert.throws(
    () => capturePlan({ interface: "sit0" }, link),
    (e: unknown) => e instanceof InvalidInputError && e.message === "unsupported link type sit",
  );
  assert.throws(() => capturePlan({ interface: "eth0", snap_len: 262145 }, link), InvalidInputError);
  assert.throws(
    () => capturePlan({ interface: "eth0", bpf_filter: [{ op: 6 }, { op: 0x15, jt: 256 }] }, link),
    (e: unknown) => e instanceof InvalidInputError && /instruction 1: jt 256/.test(e.message),
  );
  assert.throws(() => capturePlan({ interface: "eth0", bpf_filter: [{ op: 0x10000 }] }, link), InvalidInputError);
});

test("streams the pcap header then one record per packet, and closes the capture when the caller cancels", async () => {
  const capture = new FakeCapture();
  const source = fakeSource(capture);
  const call = new FakeCall<PacketCaptureRequest>({ interface: "eth0", snap_len: 64 });
  call.onWrite = (n) => {
    if (n === 3) call.cancel();
  };
  const done = streamPacketCapture(call.asStream(), { link, source });
  capture.push(packet(1));
  capture.push(packet(2));
  capture.push(packet(3));
  await done;
  assert.deepEqual(source.opened, [{ ifindex: 2, linkType: 1, snapLength: 64, promiscuous: false, filter: [] }]);
  const bytes = call.written.map((m) => (m as { bytes: Buffer }).bytes);
  assert.equal(bytes.length, 3);
  assert.equal(bytes[0]!.toString("hex"), "4d3cb2a1020004000000000000000000" + "40000000" + "01000000");
  // Record: seconds, nanoseconds, captured and original length, bytes.
  assert.equal(bytes[1]!.toString("hex"), "00f15365" + "01000000" + "0b000000" + "3d000000" + "01".repeat(11));
  assert.equal(bytes[2]!.readUInt32LE(8), 12);
  assert.ok(capture.closed >= 1);
  assert.equal(call.ended, false);
  assert.equal(call.leftover(), 0);
});

test("a capture that ends by itself ends the stream", async () => {
  const capture = new FakeCapture();
  const call = new FakeCall<PacketCaptureRequest>({ interface: "lo" });
  const done = streamPacketCapture(call.asStream(), { link, source: fakeSource(capture) });
  capture.push(packet(0));
  await capture.close();
  await done;
  assert.equal(call.written.length, 2);
  assert.equal(call.ended, true);
  assert.equal(call.leftover(), 0);
});

test("a filter the kernel refuses is InvalidArgument; other setup failures are the node's", async () => {
  const refused = new PacketCaptureSetupError("filter", "EINVAL", "error setting BPF filter: EINVAL");
  const call = new FakeCall<PacketCaptureRequest>({ interface: "eth0", bpf_filter: [{ op: 0xffff }] });
  await assert.rejects(
    streamPacketCapture(call.asStream(), { link, source: fakeSource(new FakeCapture(), refused) }),
    (e: unknown) =>
      e instanceof InvalidInputError && e.message === "the kernel refused the BPF program" && e.cause === refused,
  );
  assert.equal(call.written.length, 0);
  const denied = new PacketCaptureSetupError("socket", "EPERM", "error creating a packet socket: EPERM");
  await assert.rejects(
    streamPacketCapture(new FakeCall<PacketCaptureRequest>({ interface: "eth0" }).asStream(), {
      link,
      source: fakeSource(new FakeCapture(), denied),
    }),
    (e: unknown) => e instanceof SystemError && e.cause === denied,
  );
});

test("an unknown link is refused before any capture opens", async () => {
  const source = fakeSource(new FakeCapture());
  await assert.rejects(
    streamPacketCapture(new FakeCall<PacketCaptureRequest>({ interface: "any" }).asStream(), { link, source }),
    NotFoundError,
  );
  assert.equal(source.opened.length, 0);
});
