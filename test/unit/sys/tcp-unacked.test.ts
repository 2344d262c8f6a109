// tcpUnackedBytes against the kernel's own table: a loopback connection of this test,
// found by its four-tuple (also as Node names an IPv4 peer of a dual-stack socket), and
// a fixture line whose tx_queue is not zero.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { tcpUnackedBytes } from "../../../agent/src/sys/tcp-unacked.js";

test("a live loopback connection is listed (acknowledged: 0 bytes); once closed it is gone", async () => {
  const server = net.createServer((s) => s.pause());
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const client = net.connect((server.address() as net.AddressInfo).port, "127.0.0.1");
  await new Promise<void>((r) => client.once("connect", r));
  const conn = {
    localAddress: client.localAddress!,
    localPort: client.localPort!,
    remoteAddress: `::ffff:${client.remoteAddress!}`,
    remotePort: client.remotePort!,
  };
  await new Promise<void>((r) => client.write(Buffer.alloc(1000), () => r()));
  let unacked = await tcpUnackedBytes(conn);
  for (let i = 0; i < 100 && unacked !== 0; i++) unacked = await tcpUnackedBytes(conn);
  assert.equal(unacked, 0);
  client.destroy();
  server.close();
  await new Promise((r) => setTimeout(r, 50));
  const after = await tcpUnackedBytes(conn);
  // A closed connection lingers in TIME_WAIT or similar only on the side that closed; its queue is empty either way.
  assert.ok(after === undefined || after === 0);
});

test("the kernel's tx_queue of the matching line, IPv4 and IPv6", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-tcp-unacked-"));
  try {
    const header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
    // 10.215.40.10:50000 -> 10.215.40.1:41000, 0x1f4 = 500 bytes unacknowledged.
    writeFileSync(
      path.join(dir, "tcp"),
      `${header}   0: 0A28D70A:C350 0128D70A:A028 01 000001F4:00000000 01:00000014 00000000     0        0 12345 1 0000000000000000 20 4 30 10 -1\n`,
    );
    // fd00::10:50000 -> fd00::1:41001, 7 bytes.
    writeFileSync(
      path.join(dir, "tcp6"),
      `${header}   0: 000000FD000000000000000010000000:C350 000000FD000000000000000001000000:A029 01 00000007:00000000 00:00000000 00000000     0        0 12346 1 0000000000000000 20 4 30 10 -1\n`,
    );
    assert.equal(
      await tcpUnackedBytes(
        { localAddress: "10.215.40.10", localPort: 50000, remoteAddress: "10.215.40.1", remotePort: 41000 },
        dir,
      ),
      500,
    );
    assert.equal(
      await tcpUnackedBytes(
        { localAddress: "fd00::10", localPort: 50000, remoteAddress: "fd00::1", remotePort: 41001 },
        dir,
      ),
      7,
    );
    assert.equal(
      await tcpUnackedBytes(
        { localAddress: "10.215.40.10", localPort: 50000, remoteAddress: "10.215.40.1", remotePort: 41002 },
        dir,
      ),
      undefined,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
