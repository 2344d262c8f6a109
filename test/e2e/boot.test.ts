// End to end: the built image boots in QEMU (ISO under UEFI and under BIOS, and the
// PXE kernel+initramfs), reaches maintenance mode, and answers the v1.7 maintenance
// API from the host through the forwarded port: storage.Disks sees the blank 10 GiB
// virtio disk and COSI lists the node's addresses. One VM at a time.
// Build first: `npm run image` (npm run test:e2e does it).
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { artifactsPresent, bootNode, waitFor, type BootedNode } from "./qemu.js";

const BOOT_TIMEOUT_MS = Number(process.env.BASALT_E2E_BOOT_TIMEOUT_MS ?? 600_000);
const TEN_GIB = 10 * 1024 * 1024 * 1024;

interface Disk {
  device_name: string;
  size: number;
}
interface ListedResource {
  resource: { metadata: { namespace: string; type: string; id: string }; spec: { yaml_spec: string } };
}

const cases = [
  { name: "iso-uefi", boot: "iso", firmware: "uefi" },
  { name: "iso-bios", boot: "iso", firmware: "bios" },
  { name: "pxe", boot: "pxe" },
] as const;

describe("boot to maintenance mode", { skip: artifactsPresent() ? false : "no image under _out (npm run image)" }, () => {
  for (const c of cases) {
    test(`${c.name}: maintenance API answers Disks and AddressStatuses`, { timeout: BOOT_TIMEOUT_MS + 120_000 }, async (t) => {
      const node: BootedNode = await bootNode(c);
      t.after(() => node.stop());
      const client = node.client();

      const disks = await waitFor(node, "maintenance API (storage.Disks)", async () => {
        const reply = await client.unary<{ messages: { disks: Disk[] }[] }>(client.storage, "Disks", {}, 10_000);
        return reply.messages.flatMap((m) => m.disks);
      }, BOOT_TIMEOUT_MS);
      t.diagnostic(`${c.name}: API answered ${((Date.now() - node.startedAt) / 1000).toFixed(1)} s after QEMU start`);
      const vda = disks.find((d) => d.device_name === "/dev/vda");
      assert.ok(vda, `no /dev/vda among ${JSON.stringify(disks.map((d) => d.device_name))}`);
      assert.equal(Number(vda.size), TEN_GIB);

      // DHCP may land a moment after the listener is up: wait for the lease's address.
      const addresses = await waitFor(node, "a DHCP address in AddressStatuses", async () => {
        const listed = await client.collect<ListedResource>(client.cosi, "List", { namespace: "network", type: "AddressStatuses.net.talos.dev" }, 10_000);
        const found = listed.filter((r) => /address: 10\.0\.2\.15\/24/.test(r.resource.spec.yaml_spec));
        if (found.length === 0) throw new Error(`addresses: ${listed.map((r) => r.resource.metadata.id).join(", ")}`);
        return listed;
      }, 120_000);
      assert.ok(addresses.every((r) => r.resource.metadata.namespace === "network"));
      assert.ok(addresses.some((r) => r.resource.metadata.id.startsWith("lo/127.0.0.1")), "loopback address listed");

      const consoleText = node.console();
      assert.match(consoleText, /basalt-init: kernel uptime [\d.]+ s: machined started/);
      assert.match(consoleText, /maintenance/i);
    });
  }
});

after(() => undefined);
