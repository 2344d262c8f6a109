// End to end on arm64: the arm64 image (built on this amd64 host) boots in qemu-system-aarch64
// (machine virt, AAVMF UEFI firmware, TCG) from the ISO through GRUB, and as PXE
// kernel+initramfs, into maintenance mode; from the host, storage.Disks lists the blank
// 10 GiB virtio disk, and COSI lists the DHCP address.
// Build first: `npm run image -- --arch arm64` (npm run test:e2e does it).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { artifactsPresent, bootNode, expectMaintenanceApi, type BootedNode } from "./qemu.js";

const BOOT_TIMEOUT_MS = Number(process.env.BASALT_E2E_BOOT_TIMEOUT_MS ?? 600_000);
const cases = [
  { name: "arm64-iso-uefi", boot: "iso", firmware: "uefi" },
  { name: "arm64-pxe", boot: "pxe" },
] as const;

describe("arm64 boot to maintenance mode", { skip: artifactsPresent("arm64") ? false : "no arm64 image under _out (npm run image -- --arch arm64)" }, () => {
  for (const c of cases) {
    test(`${c.name}: maintenance API answers Disks and AddressStatuses`, { timeout: BOOT_TIMEOUT_MS + 120_000 }, async (t) => {
      const node: BootedNode = await bootNode({ ...c, arch: "arm64" });
      t.after(() => node.stop());
      await expectMaintenanceApi(node, BOOT_TIMEOUT_MS, (msg) => t.diagnostic(`${c.name}: ${msg}`));

      // Maintenance mode serves Version only to SideroLink admins (as Talos): the console shows the arm64 kernel.
      const consoleText = node.console();
      assert.match(consoleText, /Booting Linux on physical CPU 0x0+ \[0x[0-9a-f]+\]/);
      assert.match(consoleText, /Linux version \S+-arm64 /);
      assert.match(consoleText, /basalt-init: kernel uptime [\d.]+ s: machined started/);
    });
  }
});
