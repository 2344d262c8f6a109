// apid's sessions to other nodes (backend-session.ts, session-keepalive.ts): a peer that stops
// answering pings while a call is open, or never completes its handshake, ends the session, and the call
// fails with UNAVAILABLE instead of hanging; a peer that answers HTTP without gRPC gets grpc-js's status for it.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import http2 from "node:http2";
import net from "node:net";
import tls from "node:tls";
import { after, test } from "node:test";
import { openFrameStream } from "../../../agent/src/apid/frame-stream.js";
import { BackendSession } from "../../../agent/src/apid/backend-session.js";

const sockets = new Set<net.Socket>();
// Accepts connections and never answers.
const mute = net.createServer((s) => void sockets.add(s));
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
  mute.close();
  backend.close();
});

test("a peer that stops answering pings while a call is open ends the session: the call fails with UNAVAILABLE", {
  timeout: 30_000,
}, async () => {
  await new Promise<void>((resolve) => backend.listen(0, "127.0.0.1", resolve));
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  const port = (relay.address() as net.AddressInfo).port;
  const session = new BackendSession("peer", () => net.connect(port, "127.0.0.1"), {
    keepalive: { timeMs: 20, timeoutMs: 200 },
  });
  try {
    await session.ready(10_000);
    const source = openFrameStream(
      session,
      "/machine.MachineService/Dmesg",
      new grpc.Metadata(),
      Buffer.alloc(0),
      Infinity,
    );
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

test("a peer that accepts and never answers fails the session once its connect bound passed: waiting and calls alike", {
  timeout: 30_000,
}, async () => {
  await new Promise<void>((resolve) => mute.listen(0, "127.0.0.1", resolve));
  const port = (mute.address() as net.AddressInfo).port;
  // TCP connects; the TLS handshake never completes.
  const session = new BackendSession("mute", () => tls.connect({ port, host: "127.0.0.1", ALPNProtocols: ["h2"] }), {
    authority: `https://127.0.0.1:${port}`,
    connectTimeoutMs: 100,
  });
  try {
    const source = openFrameStream(
      session,
      "/machine.MachineService/Dmesg",
      new grpc.Metadata(),
      Buffer.alloc(0),
      Infinity,
    );
    const over = new Promise<grpc.StatusObject>((resolve) => source.whenOver(resolve));
    await assert.rejects(session.ready(60_000), /no connection to mute established within 100 ms/);
    const st = await over;
    assert.equal(st.code, grpc.status.UNAVAILABLE);
    assert.match(st.details, /no connection to mute established within 100 ms/);
  } finally {
    session.close();
  }
});

test("a peer that answers with an HTTP status and no gRPC status: the call ends with the status grpc-js's client makes of it", async () => {
  const answering = http2.createServer();
  const statuses = [404, 503, 418];
  answering.on("stream", (stream, headers) =>
    stream.respond({ ":status": Number(String(headers[":path"]).slice(1)) }, { endStream: true }),
  );
  await new Promise<void>((resolve) => answering.listen(0, "127.0.0.1", resolve));
  const port = (answering.address() as net.AddressInfo).port;
  const session = new BackendSession("web", () => net.connect(port, "127.0.0.1"));
  try {
    const got: [number, string][] = [];
    for (const http of statuses) {
      const source = openFrameStream(session, `/${http}`, new grpc.Metadata(), Buffer.alloc(0), Infinity);
      const st = await new Promise<grpc.StatusObject>((resolve) => source.whenOver(resolve));
      got.push([st.code, st.details]);
    }
    assert.deepEqual(got, [
      [grpc.status.UNIMPLEMENTED, "Received HTTP status code 404"],
      [grpc.status.UNAVAILABLE, "Received HTTP status code 503"],
      [grpc.status.UNKNOWN, "Received HTTP status code 418"],
    ]);
  } finally {
    session.close();
    answering.close();
  }
});
