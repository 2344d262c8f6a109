// End to end on arm64: the arm64 image (built on this amd64 host) in qemu-system-aarch64
// (machine virt, AAVMF UEFI firmware, TCG). The PXE kernel+initramfs boots into maintenance
// mode; one machine then goes through the ISO into maintenance, apply-config, install to its
// disk (GRUB arm64-efi), the reboot (Debian's arm64 kernel cannot kexec_file_load, so the
// node reboots through the firmware, as Talos does when kexec is unavailable) and a boot
// from the disk alone that serves mutual TLS and reports arm64, with udevd, syslogd and containerd
// Running and healthy and Talos's cgroups.
// Build first: `npm run image -- --arch arm64` (npm run test:e2e does it).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ApplyMode } from "../../agent/src/api/enums.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { expectServicesHealthy, expectTalosCgroups } from "./node-checks.js";
import {
  artifactsPresent,
  bootNode,
  expectMaintenanceApi,
  physicalLinkNames,
  systemPartitionNames,
  waitFor,
  type BootedNode,
} from "./qemu.js";

const BOOT_TIMEOUT_MS = Number(process.env.BASALT_E2E_BOOT_TIMEOUT_MS ?? 600_000);
const skip = artifactsPresent("arm64") ? false : "no arm64 image under _out (npm run image -- --arch arm64)";

function expectArm64Kernel(node: BootedNode): void {
  const consoleText = node.console();
  assert.match(consoleText, /Booting Linux on physical CPU 0x0+ \[0x[0-9a-f]+\]/);
  assert.match(consoleText, /Linux version \S+-arm64 /);
  assert.match(consoleText, /basalt-init: kernel uptime [\d.]+ s: machined started/);
}

describe("arm64", { skip }, () => {
  test("arm64-pxe: maintenance API answers Disks and AddressStatuses; the NIC is enp0s2", {
    timeout: BOOT_TIMEOUT_MS + 120_000,
  }, async (t) => {
    const node = await bootNode({ name: "arm64-pxe", boot: "pxe", arch: "arm64" });
    t.after(() => node.stop());
    const addresses = await expectMaintenanceApi(node, BOOT_TIMEOUT_MS, (msg) => t.diagnostic(`arm64-pxe: ${msg}`));
    expectArm64Kernel(node);
    // udev's predictable name: virtio-net in PCI slot 2 of virt's PCIe root (slot 1 is the disk).
    assert.deepEqual(await physicalLinkNames(node.client()), ["enp0s2"]);
    assert.ok(
      addresses.some((r) => r.resource.metadata.id === "enp0s2/10.0.2.15/24"),
      addresses.map((r) => r.resource.metadata.id).join(" "),
    );
  });

  test("arm64 journey: ISO → maintenance → install → reboot → disk boot over mTLS", {
    timeout: 3 * BOOT_TIMEOUT_MS,
  }, async (t) => {
    const generated = await generateConfigs({
      clusterName: "arm64",
      endpoint: "https://10.0.2.15:6443",
      installDisk: "/dev/vda",
    });
    const creds = parseTalosconfig(generated.talosconfig);
    const disk = "arm64-journey";
    let node = await bootNode({ name: "arm64-journey-1-iso", boot: "iso", arch: "arm64", disk });
    t.after(() => node.stop({ removeDisk: true }));

    await t.test("the ISO (AAVMF, GRUB) boots into maintenance mode: Disks, AddressStatuses", async () => {
      await expectMaintenanceApi(node, BOOT_TIMEOUT_MS, (msg) => t.diagnostic(`arm64-iso: ${msg}`));
      // Maintenance mode serves Version only to SideroLink admins (as Talos): the console shows the arm64 kernel.
      expectArm64Kernel(node);
    });

    await t.test("apply-config installs to /dev/vda; without kexec_file_load the node reboots", async () => {
      await node.client().applyConfiguration(generated.controlplane, { mode: ApplyMode.REBOOT });
      await node.exited;
      const consoleText = node.console();
      for (const line of [
        /task install \(1\/1\): done/,
        /bootloader installed .*"arch":"arm64"/,
        /task saveConfig \(1\/1\): done/,
        /cannot kexec .*rebooting through the firmware/,
        /reboot now/,
      ]) {
        assert.match(consoleText, line);
      }
    });

    await t.test("the disk alone boots (UEFI, GRUB arm64-efi) and serves mTLS; Version reports arm64", async () => {
      await node.stop({ removeDisk: false });
      node = await bootNode({ name: "arm64-journey-2-disk", boot: "disk", arch: "arm64", disk, freshDisk: false });
      const admin = node.mtlsClient(creds);
      const reply = await waitFor(
        node,
        "mTLS Version from the installed disk",
        () => admin.version() as Promise<{ messages: { version: { tag: string; arch: string } }[] }>,
        BOOT_TIMEOUT_MS,
      );
      assert.equal(reply.messages[0]!.version.arch, "arm64");
      assert.match(reply.messages[0]!.version.tag, /basalt/);
      const consoleText = node.console();
      assert.match(consoleText, /Booting `A - Basalt /, "GRUB from the disk booted entry A");
      assert.doesNotMatch(
        consoleText,
        /error: (serial port|terminal)/,
        "grub.cfg asks for no serial port arm64's GRUB lacks",
      );
      assert.match(consoleText, /loaded stored configuration/);
      assert.deepEqual(await systemPartitionNames(admin, "vda"), ["EFI", "BIOS", "BOOT", "META", "STATE", "EPHEMERAL"]);
    });

    await t.test(
      "udevd, syslogd and containerd Running and healthy; Talos's cgroups hold machined, apid, udevd and containerd",
      async () => {
        const admin = node.mtlsClient(creds);
        await expectServicesHealthy(
          node,
          admin,
          ["apid", "containerd", "machined", "syslogd", "trustd", "udevd"],
          BOOT_TIMEOUT_MS,
        );
        await expectTalosCgroups(admin);
      },
    );
  });
});
