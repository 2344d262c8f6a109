import assert from "node:assert/strict";
import dgram from "node:dgram";
import { test } from "node:test";
import { Dhcp6Port } from "../../../agent/src/network/dhcp6/udp.js";

const udpHandles = () => process.getActiveResourcesInfo().filter((r) => r === "UDPWrap").length;

test("a failed bind of the DHCPv6 port leaves no socket behind (each retry made one more)", async () => {
  // A socket without SO_REUSEADDR holds the port, so the port's reuseAddr bind fails with EADDRINUSE.
  const holder = dgram.createSocket({ type: "udp6" });
  await new Promise<void>((resolve) => holder.bind({ port: 0, address: "::" }, resolve));
  try {
    const before = udpHandles();
    const port = new Dhcp6Port({ clientPort: holder.address().port });
    for (let attempt = 0; attempt < 3; attempt++)
      await assert.rejects(port.transport("eth0"), /cannot bind DHCPv6 client port/);
    for (let i = 0; i < 100 && udpHandles() !== before; i++) await new Promise((r) => setImmediate(r));
    assert.equal(udpHandles(), before);
  } finally {
    holder.close();
  }
});
