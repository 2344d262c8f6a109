// Keepalive pings on apid's backend sessions (session-keepalive.ts): a peer that stops answering
// while a call is open ends the session, and the call fails with UNAVAILABLE instead of hanging.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import http2 from "node:http2";
import net from "node:net";
import { after, test } from "node:test";
import { openFrameStream } from "../../../agent/src/apid/frame-stream.js";
import { BackendSession } from "../../../agent/src/apid/raw-relay.js";

const sockets = new Set<net.Socket>();
// A backend that accepts every call and never answers it.
const backend = http2.createServer();
backend.on("stream", () => {});
// Passes bytes both ways until frozen: then the peer is still connected but silent, pings included.
let frozen = false;
const relay = net.createServer((down) => {
  const up = net.connect((backend.address() as net.AddressInfo).port, "127.0.0.1");
  for (const s of [down, up]) {
    sockets.add(s);
    s.on("error", () => {});
  }
  down.on("data", (b) => void (frozen || up.write(b)));
  up.on("data", (b) => void (frozen || down.write(b)));
});

after(() => {
  for (const s of sockets) s.destroy();
  relay.close();
  backend.close();
});

test("a peer that stops answering pings while a call is open ends the session: the call fails with UNAVAILABLE", { timeout: 30_000 }, async () => {
  await new Promise<void>((resolve) => backend.listen(0, "127.0.0.1", resolve));
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  const port = (relay.address() as net.AddressInfo).port;
  const session = new BackendSession("peer", () => net.connect(port, "127.0.0.1"), { keepalive: { timeMs: 20, timeoutMs: 200 } });
  try {
    await session.ready(10_000);
    const source = openFrameStream(session, "/machine.MachineService/Dmesg", new grpc.Metadata(), Buffer.alloc(0), Infinity);
    const over = new Promise<grpc.StatusObject>((resolve) => source.whenOver(resolve));
    // Pings are answered while the relay passes them: the call stays open until the peer goes silent.
    await new Promise((r) => setTimeout(r, 100));
    frozen = true;
    const st = await over;
    assert.equal(st.code, grpc.status.UNAVAILABLE);
    assert.match(st.details, /keepalive ping not answered within 200 ms/);
  } finally {
    session.close();
  }
});
