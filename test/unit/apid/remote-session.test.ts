// apid's sessions to other nodes are dialled as Talos's apid dials (internal/app/apid/pkg/backend/apid.go):
// receive windows of 65535*32 per stream and 65535*16 for the connection, not Node's 64 KiB, and closed once no
// call has been open for the idle timeout (15 minutes there; 50 ms here), to be opened again by the next call.
import assert from "node:assert/strict";
import http2 from "node:http2";
import net from "node:net";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { remoteSessionOptions } from "../../../agent/src/apid/remote-backends.js";
import { BackendSession } from "../../../agent/src/apid/backend-session.js";

test("a remote session's SETTINGS and connection window are Talos's apid's", async (t) => {
  const server = http2.createServer();
  t.after(() => server.close());
  const seen = new Promise<{ stream: number | undefined; connection: number }>((resolve) => {
    server.on("stream", (stream) => {
      const session = stream.session!;
      stream.respond({ ":status": 200 });
      stream.end();
      // The connection window arrives as a WINDOW_UPDATE on stream 0 once the client connected; without one, what is
      // there after 5 s is the answer.
      const report = () =>
        resolve({ stream: session.remoteSettings.initialWindowSize, connection: session.state.remoteWindowSize! });
      const deadline = Date.now() + 5000;
      const check = () =>
        session.state.remoteWindowSize! > 65535 || Date.now() > deadline ? report() : setTimeout(check, 10);
      check();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  const session = new BackendSession("peer", () => net.connect(port, "127.0.0.1"), {
    windows: remoteSessionOptions.windows!,
  });
  t.after(() => session.close());
  const req = session.request({ ":method": "POST", ":path": "/machine.MachineService/Version" });
  req.resume();
  const got = await seen;
  assert.deepEqual(got, { stream: 65535 * 32, connection: 65535 * 16 });
});

/** Whether `cond` holds within 5 s (polled). */
async function eventually(cond: () => boolean): Promise<boolean> {
  for (const deadline = Date.now() + 5000; Date.now() < deadline; await sleep(10)) if (cond()) return true;
  return cond();
}

test("a session with no call open for its idle timeout is closed, an open call keeps it, the next call opens another", async (t) => {
  const server = http2.createServer();
  t.after(() => server.close());
  const sessions: { closed: boolean }[] = [];
  server.on("session", (s) => {
    const seen = { closed: false };
    sessions.push(seen);
    s.on("close", () => (seen.closed = true));
  });
  let held: http2.ServerHttp2Stream | undefined;
  server.on("stream", (stream, headers) => {
    stream.respond({ ":status": 200 });
    if (headers[":path"] === "/held") held = stream;
    else stream.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  const session = new BackendSession("peer", () => net.connect(port, "127.0.0.1"), { idleTimeoutMs: 50 });
  t.after(() => session.close());
  const call = (path: string) =>
    new Promise<void>((resolve) => {
      const req = session.request({ ":method": "POST", ":path": path });
      req.resume();
      req.on("close", () => resolve());
      req.end();
    });

  const open = call("/held");
  assert.ok(await eventually(() => held !== undefined));
  await sleep(300);
  assert.deepEqual(sessions, [{ closed: false }], "a call is open: the session stays");
  held!.end();
  await open;
  assert.ok(await eventually(() => sessions[0]!.closed), "no call open for the idle timeout: the session is closed");
  await call("/next");
  assert.deepEqual(sessions, [{ closed: true }, { closed: false }], "the next call opened another session");
});
