// apid's sessions to other nodes advertise Talos's receive windows (internal/app/apid/pkg/backend/apid.go:
// 65535*32 per stream, 65535*16 for the connection), not Node's 64 KiB: a streamed Read from another node
// otherwise stalls on a WINDOW_UPDATE every 64 KiB.
import assert from "node:assert/strict";
import http2 from "node:http2";
import net from "node:net";
import { test } from "node:test";
import { remoteSessionOptions } from "../../../agent/src/apid/backends.js";
import { BackendSession } from "../../../agent/src/apid/raw-relay.js";

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
      const report = () => resolve({ stream: session.remoteSettings.initialWindowSize, connection: session.state.remoteWindowSize! });
      const deadline = Date.now() + 5000;
      const check = () => (session.state.remoteWindowSize! > 65535 || Date.now() > deadline ? report() : setTimeout(check, 10));
      check();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  const session = new BackendSession("peer", () => net.connect(port, "127.0.0.1"), { windows: remoteSessionOptions.windows! });
  t.after(() => session.close());
  const req = session.request({ ":method": "POST", ":path": "/machine.MachineService/Version" });
  req.resume();
  const got = await seen;
  assert.deepEqual(got, { stream: 65535 * 32, connection: 65535 * 16 });
});
