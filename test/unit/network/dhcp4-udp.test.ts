import assert from "node:assert/strict";
import { test } from "node:test";
import { DhcpPort } from "../../../agent/src/network/dhcp4/udp.js";
import { FakeNetKernel } from "../sys/net-fake.js";

const udpHandles = () => process.getActiveResourcesInfo().filter((r) => r === "UDPWrap").length;

test("the shared DHCP socket closes with the last transport, and a late send does not reopen it", async () => {
  const before = udpHandles();
  const port = new DhcpPort({ kernel: new FakeNetKernel(), clientPort: 0, serverPort: 9, bindAddress: "127.0.0.1" });
  const a = await port.transport("eth0");
  const b = await port.transport("eth1");
  a.onReceive(() => undefined);
  b.onReceive(() => undefined);
  assert.equal(udpHandles(), before + 1, "one socket shared by both links");
  a.close();
  b.close();
  await assert.rejects(a.send(Buffer.from([1]), { broadcast: false, address: "127.0.0.1" }), /socket is closed/);
  await assert.rejects(b.send(Buffer.from([1]), { broadcast: true }), /socket is closed/);
  // Closing a socket releases its handle a few turns later; a reopened one would stay.
  for (let i = 0; i < 100 && udpHandles() !== before; i++) await new Promise((r) => setImmediate(r));
  assert.equal(udpHandles(), before, "no socket left open to keep the process alive");
});

test("a failed bind leaves no socket behind (each retry made one more)", async () => {
  const before = udpHandles();
  // 192.0.2.1 (TEST-NET-1) is no address of this host: bind fails with EADDRNOTAVAIL.
  const port = new DhcpPort({ kernel: new FakeNetKernel(), clientPort: 0, bindAddress: "192.0.2.1" });
  for (let attempt = 0; attempt < 3; attempt++)
    await assert.rejects(port.transport("eth0"), /cannot bind DHCP client port/);
  for (let i = 0; i < 100 && udpHandles() !== before; i++) await new Promise((r) => setImmediate(r));
  assert.equal(udpHandles(), before);
});
