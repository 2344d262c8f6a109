// What the rtnetlink adapter does with a failed receive the netlink package reports as an
// 'error' event (its native reader calls back with ENOBUFS after an overrun).

import assert from "node:assert/strict";
import { test } from "node:test";
import { NetlinkNetKernel } from "../../../agent/src/sys/net-netlink.js";
import { setLogSink } from "../../../agent/src/log.js";

test("a receive error on the request socket is logged, and the socket keeps answering", async (t) => {
  const kernel = new NetlinkNetKernel({ timeoutMs: 5000 });
  t.after(() => kernel.close());
  const lines: string[] = [];
  const previous = setLogSink((l) => lines.push(l));
  t.after(() => setLogSink(previous));
  // The adapter's socket is private; the test reaches the package's raw socket, where the native error lands.
  const raw = (kernel as unknown as { socket: { socket: { socket: NodeJS.EventEmitter } } }).socket.socket.socket;
  raw.emit(
    "error",
    Object.assign(new Error("Error when receiving Netlink message: No buffer space available"), { code: "ENOBUFS" }),
  );
  assert.equal(
    lines.filter((l) => l.includes("rtnetlink request socket") && l.includes("No buffer space available")).length,
    1,
  );
  const links = await kernel.listLinks();
  assert.equal(links.filter((l) => l.name === "lo").length, 1);
});
