// The upgrade journey with one machine, against a real registry (Debian's docker-registry
// on the host, which the guest reaches at 10.0.2.2): a PXE boot (no ISO) installs from
// machine.install.image and comes back from the disk; Upgrade to this
// build's installer pushed under a new tag (kexec into slot B, confirmed once ready, the
// config kept); Rollback to slot A; an Upgrade to an installer whose initramfs is truncated
// (the kernel panics in slot B, twice at most) ends with the node back in slot A, ready,
// and the console saying why.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { parseDocument } from "yaml";
import { ApplyMode } from "../../agent/src/api/enums.js";
import type { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { RepositoryClient } from "../../agent/src/oci/client.js";
import { registryEndpoints } from "../../agent/src/oci/hosts.js";
import { buildInstallerArchive } from "../../agent/src/oci/installer.js";
import { LayoutArchive } from "../../agent/src/oci/layout.js";
import { registryBinary, startRegistry } from "../integration/helpers/registry.js";
import { artifactsPresent, bootNode, repoRoot, waitFor, type BootedNode } from "./qemu.js";

// Generous: on a shared 2-core host a TCG boot has taken 7 minutes of kernel uptime.
const bootMs = 1_200_000;
// Install from PXE also pulls the ~90 MB installer inside the guest: 10 minutes of it on that host.
const installMs = 2_400_000;
const disk = "upgrade-journey";
const out = path.join(repoRoot, "_out");
const installer = path.join(out, "installer-amd64.tar");
const work = path.join(out, "e2e", "upgrade");

type ResourceItem = { resource: { metadata: { id: string }; spec: { yaml_spec: string } } };
type ResourceReply = { resource: { spec: { yaml_spec: string } } };

async function bootedSlot(c: NodeClient): Promise<string> {
  const cmdline = (await c.read("/proc/cmdline")).toString();
  return /BOOT_IMAGE=\S*\/(A|B)\/vmlinuz/.exec(cmdline)?.[1] ?? `none (${cmdline.trim()})`;
}

async function metaKeys(c: NodeClient): Promise<Map<string, string>> {
  const listed = await c.collect<ResourceItem>(c.cosi, "List", { namespace: "runtime", type: "MetaKeys.runtime.talos.dev" }, 10_000);
  return new Map(listed.map((r) => [r.resource.metadata.id, /value: (.*)/.exec(r.resource.spec.yaml_spec)?.[1] ?? ""]));
}

// Not yet part of the test command: this journey has not passed once (its boots outlasted their bounds on
// a loaded host); run it with BASALT_E2E_UPGRADE=1 until it has, then drop the switch.
const skip =
  process.env["BASALT_E2E_UPGRADE"] !== "1"
    ? "the upgrade journey runs only with BASALT_E2E_UPGRADE=1 (not yet passed)"
    : artifactsPresent() && fs.existsSync(installer) && fs.existsSync(registryBinary)
      ? false
      : "image or installer not built (npm run image), or docker-registry missing";

test("upgrade journey: install → Upgrade (slot B) → Rollback (slot A) → broken Upgrade back on slot A", { skip, timeout: 90 * 60_000 }, async (t) => {
  fs.rmSync(work, { recursive: true, force: true });
  const registry = await startRegistry(path.join(work, "registry"), { plain: true });
  t.after(() => registry.stop());
  const port = registry.host.split(":")[1]!;
  const guestHost = `10.0.2.2:${port}`;
  const repo = new RepositoryClient(registryEndpoints({ mirrors: { [registry.host]: { endpoints: [`http://${registry.host}`] } } }, registry.host)[0]!, "basalt/installer");
  await (await LayoutArchive.open(installer)).push(repo, "upgrade-1");
  // The broken installer: this build's kernel with the initramfs cut in half.
  const truncated = path.join(work, "initramfs-truncated.xz");
  const initramfs = fs.readFileSync(path.join(out, "initramfs-amd64.xz"));
  fs.writeFileSync(truncated, initramfs.subarray(0, Math.floor(initramfs.length / 2)));
  await buildInstallerArchive(path.join(work, "broken.tar"), "broken", [{ arch: "amd64", kernel: path.join(out, "vmlinuz-amd64"), initramfs: truncated }]);
  await (await LayoutArchive.open(path.join(work, "broken.tar"))).push(repo, "broken");

  const generated = await generateConfigs({ clusterName: "upgrade", endpoint: "https://10.0.2.15:6443", installDisk: "/dev/vda" });
  const doc = parseDocument(generated.controlplane);
  // The node names the registry as the guest sees the host; plain HTTP is a mirror endpoint, as Talos users write it.
  doc.setIn(["machine", "registries", "mirrors", guestHost], { endpoints: [`http://${guestHost}`] });
  doc.setIn(["machine", "network", "hostname"], "upgrade-node");
  doc.setIn(["machine", "install", "image"], `${guestHost}/basalt/installer:upgrade-1`);
  const config = doc.toString();
  const creds = parseTalosconfig(generated.talosconfig);

  let node: BootedNode = await bootNode({ name: "upgrade-1-pxe", boot: "pxe", disk, netOpen: true });
  t.after(() => node.stop({ removeDisk: true }));
  const admin = () => node.mtlsClient(creds);
  const reboot = async (name: string) => {
    await node.exited;
    await node.stop({ removeDisk: false });
    node = await bootNode({ name, boot: "disk", disk, freshDisk: false, netOpen: true });
  };

  // It comes back from the disk's kernel (kexec); the Rollback below boots the disk through GRUB.
  await t.test("a PXE boot installs from machine.install.image and comes back from the disk in slot A", async () => {
    await waitFor(node, "maintenance API", () => node.client().disks(), bootMs);
    await node.client().applyConfiguration(config, { mode: ApplyMode.REBOOT });
    await waitFor(node, "mTLS after install", () => admin().version(), installMs);
    assert.equal(await bootedSlot(admin()), "A");
    assert.match(node.console(), /no boot medium: installing from machine.install.image/);
    assert.match(node.console(), /installer pulled/);
  });

  await t.test("Upgrade pulls from the registry, kexecs into slot B and confirms it once ready; the config is kept", async () => {
    const c = admin();
    const bootId = (await c.read("/proc/sys/kernel/random/boot_id")).toString().trim();
    const reply = await c.unary<{ messages: { ack: string; actor_id: string }[] }>(c.machine, "Upgrade", { image: `${guestHost}/basalt/installer:upgrade-1` }, 300_000);
    assert.equal(reply.messages[0]!.ack, "Upgrade request received");
    await waitFor(node, "a new boot after the upgrade", async () => {
      const now = (await admin().read("/proc/sys/kernel/random/boot_id")).toString().trim();
      if (now === bootId) throw new Error("still the old boot");
    }, bootMs);
    await waitFor(node, "the upgrade confirmed (META 0x06 gone)", async () => {
      const keys = await metaKeys(admin());
      if (keys.has("0x06")) throw new Error(`META 0x06 = ${keys.get("0x06")}`);
    }, bootMs);
    const after = admin();
    assert.equal(await bootedSlot(after), "B");
    const hostname = (await after.resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname")) as ResourceReply;
    assert.match(hostname.resource.spec.yaml_spec, /hostname: upgrade-node/);
    assert.match(node.console(), /upgrade confirmed: slot B is GRUB's default, slot A its fallback/);
  });

  await t.test("Rollback reboots into slot A", async () => {
    await admin().unary(admin().machine, "Rollback", {});
    await reboot("upgrade-2-rollback");
    await waitFor(node, "mTLS after rollback", () => admin().version(), bootMs);
    assert.equal(await bootedSlot(admin()), "A");
  });

  await t.test("an installer with a truncated initramfs: the node comes back on slot A, ready, and says why", async () => {
    const c = admin();
    await c.unary(c.machine, "Upgrade", { image: `${guestHost}/basalt/installer:broken` }, 300_000);
    // kexec into the broken slot B: its kernel panics (panic=10) and the firmware reboot ends QEMU; from the
    // disk, GRUB tries B once more (its one-time entry), which panics again; the next boot is GRUB's default, A.
    for (let i = 2; ; i++) {
      await reboot(`upgrade-3-broken-${i}`);
      const back = await waitFor(node, "slot A's API, or another panic", async () => {
        if (node.console().includes("[vm.sh exited")) return false;
        await admin().version();
        return true;
      }, bootMs).catch((err: unknown) => {
        if (node.console().includes("Kernel panic")) return false;
        throw err;
      });
      if (back) break;
      assert.ok(i < 4, "the node came back within two panics");
    }
    assert.equal(await bootedSlot(admin()), "A");
    assert.match(node.console(), /UPGRADE FAILED: the new system in slot B did not reach Running and ready/);
    await waitFor(node, "ready", async () => {
      const status = (await admin().resourceGet("runtime", "MachineStatuses.runtime.talos.dev", "machine")) as ResourceReply;
      assert.match(status.resource.spec.yaml_spec, /stage: running[\s\S]*ready: true/);
    }, bootMs);
    assert.equal((await metaKeys(admin())).has("0x06"), false);
  });
});
