// End to end on arm64: the arm64 image (built on this amd64 host) boots in qemu-system-aarch64
// (machine virt, AAVMF UEFI firmware, TCG) from the ISO through GRUB, and as PXE
// kernel+initramfs, into maintenance mode; from the host, storage.Disks lists the blank
// 10 GiB virtio disk, and COSI lists the DHCP address.
// Build first: `npm run image -- --arch arm64` (npm run test:e2e does it).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
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
  { name: "arm64-iso-uefi", boot: "iso", firmware: "uefi" },
  { name: "arm64-pxe", boot: "pxe" },
] as const;

describe("arm64 boot to maintenance mode", { skip: artifactsPresent("arm64") ? false : "no arm64 image under _out (npm run image -- --arch arm64)" }, () => {
  for (const c of cases) {
    test(`${c.name}: maintenance API answers Disks and AddressStatuses`, { timeout: BOOT_TIMEOUT_MS + 120_000 }, async (t) => {
      const node: BootedNode = await bootNode({ ...c, arch: "arm64" });
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

      await waitFor(node, "a DHCP address in AddressStatuses", async () => {
        const listed = await client.collect<ListedResource>(client.cosi, "List", { namespace: "network", type: "AddressStatuses.net.talos.dev" }, 10_000);
        if (!listed.some((r) => /address: 10\.0\.2\.15\/24/.test(r.resource.spec.yaml_spec))) {
          throw new Error(`addresses: ${listed.map((r) => r.resource.metadata.id).join(", ")}`);
        }
      }, 120_000);

      // Maintenance mode serves Version only to SideroLink admins (as Talos): the console shows the arm64 kernel.
      const consoleText = node.console();
      assert.match(consoleText, /Booting Linux on physical CPU 0x0+ \[0x[0-9a-f]+\]/);
      assert.match(consoleText, /Linux version \S+-arm64 /);
      assert.match(consoleText, /basalt-init: kernel uptime [\d.]+ s: machined started/);
    });
  }
});
