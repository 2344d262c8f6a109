// End to end: the built image boots in QEMU (ISO under UEFI and under BIOS, and the
// PXE kernel+initramfs), reaches maintenance mode, and answers the v1.7 maintenance
// API from the host through the forwarded port: storage.Disks sees the blank 10 GiB
// virtio disk and COSI lists the node's addresses. The NIC (virtio-net, PCI slot 3 of q35)
// gets its predictable name, enp0s3, except where net.ifnames=0 keeps eth0 (the PXE boot). One VM at a time.
// Build first: `npm run image` (npm run test:e2e does it).
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import {
  artifactsPresent,
  bootNode,
  devicesStatusYaml,
  expectMaintenanceApi,
  physicalLinkNames,
  waitFor,
  type BootedNode,
} from "./qemu.js";

const BOOT_TIMEOUT_MS = Number(process.env.BASALT_E2E_BOOT_TIMEOUT_MS ?? 600_000);
const cases = [
  { name: "iso-uefi", boot: "iso", firmware: "uefi", link: "enp0s3" },
  { name: "iso-bios", boot: "iso", firmware: "bios", link: "enp0s3" },
  { name: "pxe", boot: "pxe", append: "net.ifnames=0", link: "eth0" },
] as const;

describe("boot to maintenance mode", {
  skip: artifactsPresent() ? false : "no image under _out (npm run image)",
}, () => {
  for (const c of cases) {
    test(`${c.name}: maintenance API answers Disks and AddressStatuses; the NIC is ${c.link}`, {
      timeout: BOOT_TIMEOUT_MS + 120_000,
    }, async (t) => {
      const node: BootedNode = await bootNode(c);
      t.after(() => node.stop());
      const addresses = await expectMaintenanceApi(node, BOOT_TIMEOUT_MS, (msg) => t.diagnostic(`${c.name}: ${msg}`));
      assert.ok(addresses.every((r) => r.resource.metadata.namespace === "network"));
      assert.ok(
        addresses.some((r) => r.resource.metadata.id.startsWith("lo/127.0.0.1")),
        "loopback address listed",
      );
      assert.ok(
        addresses.some((r) => r.resource.metadata.id === `${c.link}/10.0.2.15/24`),
        addresses.map((r) => r.resource.metadata.id).join(" "),
      );
      assert.deepEqual(await physicalLinkNames(node.client()), [c.link]);
      assert.deepEqual(await devicesStatusYaml(node.client()), ["devices: ready: true\n"]);

      const consoleText = node.console();
      assert.match(consoleText, /basalt-init: kernel uptime [\d.]+ s: machined started/);
      assert.match(consoleText, /maintenance/i);
      // The banner says where to apply a config only once the API listens (served from machined's process, as Talos does).
      const withBanner = await waitFor(
        node,
        "the maintenance banner",
        async () => {
          if (!node.console().includes("entering maintenance service")) throw new Error("not yet");
          return node.console();
        },
        120_000,
      );
      const listening = withBanner.indexOf("api listener ready");
      assert.ok(
        listening >= 0 && listening < withBanner.indexOf("entering maintenance service"),
        "maintenance banner after the API listener",
      );
    });
  }
});

after(() => undefined);
