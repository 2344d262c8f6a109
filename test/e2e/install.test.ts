// The user's journey with one machine (one disk) across its boots: the ISO in
// maintenance mode, apply-config, install and kexec into the installed system,
// mutual TLS, partitions and mounts over the API, a live hostname change, Reboot
// (the ISO still attached: the disk's config wins), a cold BIOS boot from the disk
// alone, and Reset of STATE and EPHEMERAL back to maintenance mode.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApplyMode } from "../../agent/src/api/enums.js";
import type { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { artifactsPresent, bootNode, systemPartitionNames, waitFor, type BootedNode } from "./qemu.js";

const bootMs = 600_000;
const disk = "install-journey";

type Versioned = { messages: { version: { tag: string } }[] };
type MountsReply = { messages: { stats: { filesystem: string; mounted_on: string }[] }[] };
type ResourceReply = { resource: { spec: { yaml_spec: string } } };

async function expectMaintenance(node: BootedNode) {
  const insecure = node.client();
  await waitFor(node, "maintenance API", () => insecure.disks(), bootMs);
  await assert.rejects(insecure.version(), /not implemented in maintenance mode/);
}

test("install journey: maintenance → install → mTLS → reboot → cold boot → reset", { skip: artifactsPresent() ? false : "image not built (npm run image)", timeout: 60 * 60_000 }, async (t) => {
  const generated = await generateConfigs({ clusterName: "journey", endpoint: "https://10.0.2.15:6443", installDisk: "/dev/vda" });
  const creds = parseTalosconfig(generated.talosconfig);
  let node = await bootNode({ name: "journey-1-iso", boot: "iso", disk });
  t.after(() => node.stop({ removeDisk: true }));

  await t.test("the ISO boots into maintenance mode", () => expectMaintenance(node));

  await t.test("apply-config installs to /dev/vda and the installed system serves mutual TLS", async () => {
    await node.client().applyConfiguration(generated.controlplane, { mode: ApplyMode.REBOOT });
    const admin = node.mtlsClient(creds);
    const version = await waitFor(node, "mTLS Version after install", () => admin.version() as Promise<Versioned>, bootMs);
    assert.match(version.messages[0]!.version.tag, /basalt/);
    const console = node.console();
    for (const line of [/initialize sequence: done/, /task install \(1\/1\): done/, /task saveConfig \(1\/1\): done/, /task kexecPrepare/, /boot sequence: done/, /task mountEphemeralPartition \(1\/1\): done/]) {
      assert.match(console, line);
    }
  });

  const admin = () => node.mtlsClient(creds);

  await t.test("six partitions with Talos's names, STATE and EPHEMERAL mounted", async () => {
    const c = admin();
    assert.deepEqual(await systemPartitionNames(c, "vda"), ["EFI", "BIOS", "BOOT", "META", "STATE", "EPHEMERAL"]);
    const mounts = ((await c.mounts()) as MountsReply).messages[0]!.stats;
    assert.ok(mounts.some((m) => m.mounted_on === "/var" && m.filesystem === "/dev/vda6"), "EPHEMERAL at /var");
    assert.ok(mounts.some((m) => m.mounted_on === "/system/state" && m.filesystem === "/dev/vda5"), "STATE at /system/state");
    // apid runs unprivileged, as on Talos: uid/gid 50 (found by its command line under /proc).
    const procs = (await c.collect<{ name: string }>(c.machine, "List", { root: "/proc", recurse: false })).map((f) => f.name).filter((n) => /^\/proc\/\d+$/.test(n));
    let apidStatus = "";
    for (const p of procs) {
      const cmdline = await c.read(`${p}/cmdline`).catch(() => Buffer.alloc(0));
      if (cmdline.toString().split("\0").includes("apid")) apidStatus = (await c.read(`${p}/status`)).toString();
    }
    assert.match(apidStatus, /^Uid:\s+50\s/m, "apid's uid");
    assert.match(apidStatus, /^Gid:\s+50\s/m, "apid's gid");
    const state = (await c.resourceGet("runtime", "MountStatuses.runtime.talos.dev", "STATE")) as ResourceReply;
    assert.match(state.resource.spec.yaml_spec, /target: \/system\/state/);
  });

  await t.test("services: udevd and syslogd run; Talos's cgroups hold machined, apid and udevd; Logs answers", async () => {
    const c = admin();
    await waitFor(node, "udevd and syslogd healthy", async () => {
      const reply = (await c.serviceList()) as { messages: { services: { id: string; state: string; health: { healthy: boolean } }[] }[] };
      const byId = new Map(reply.messages[0]!.services.map((s) => [s.id, s]));
      for (const id of ["apid", "machined", "syslogd", "trustd", "udevd"]) {
        assert.equal(byId.get(id)?.state, "Running", id);
        assert.equal(byId.get(id)?.health.healthy, true, id);
      }
    }, 120_000);
    const names = async (root: string) => (await c.collect<{ name: string }>(c.machine, "List", { root, recurse: false })).map((f) => f.name.slice(root.length + 1));
    const groups = await names("/sys/fs/cgroup");
    for (const g of ["init", "system", "podruntime", "kubepods"]) assert.ok(groups.includes(g), `/sys/fs/cgroup/${g}`);
    // Each process's group, found by its command line.
    const cgroupOf = async (match: (argv: string[]) => boolean) => {
      for (const p of (await names("/proc")).filter((n) => /^\d+$/.test(n))) {
        const argv = (await c.read(`/proc/${p}/cmdline`).catch(() => Buffer.alloc(0))).toString().split("\0");
        if (match(argv)) return (await c.read(`/proc/${p}/cgroup`)).toString();
      }
      return "";
    };
    assert.equal(await cgroupOf((a) => a.includes("machined")), "0::/init\n");
    assert.equal(await cgroupOf((a) => a.includes("apid")), "0::/system/apid\n");
    assert.equal(await cgroupOf((a) => a[0] === "systemd-udevd"), "0::/system/udevd\n");
    // udevd's trigger and settle made the by-* links.
    assert.deepEqual((await names("/dev/disk/by-partlabel")).filter((n) => ["STATE", "EPHEMERAL"].includes(n)).sort(), ["EPHEMERAL", "STATE"]);
    const logs = Buffer.concat((await c.collect<{ bytes: Buffer }>(c.machine, "Logs", { namespace: "system", id: "apid", tail_lines: 5 })).map((d) => d.bytes)).toString();
    // apid may have printed fewer than 5 lines since its start; the tail is its last lines, whole.
    const lines = logs.split("\n");
    assert.ok(lines.length >= 2 && lines.length <= 6 && lines.at(-1) === "", logs);
    await assert.rejects(c.collect(c.machine, "Logs", { namespace: "system", id: "nosuchservice", tail_lines: -1 }), /log "nosuchservice" was not registered/);
  });

  await t.test("a no-reboot hostname change shows in HostnameStatus", async () => {
    const c = admin();
    const patched = generated.controlplane.replace(/^(\s+)network: \{\}$/m, "$1network:\n$1    hostname: journey-node");
    assert.notEqual(patched, generated.controlplane, "the generated config has machine.network: {}");
    const reply = (await c.applyConfiguration(patched, { mode: ApplyMode.NO_REBOOT })) as { messages: { mode_details: string }[] };
    assert.equal(reply.messages[0]!.mode_details, "Applied configuration without a reboot");
    await waitFor(node, "hostname status", async () => {
      const res = (await c.resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname")) as ResourceReply;
      assert.match(res.resource.spec.yaml_spec, /hostname: journey-node/);
    }, 60_000);
  });

  let bootId = "";
  await t.test("Reboot: a new boot (new boot_id), the ISO still attached and the disk's config used", async () => {
    const c = admin();
    bootId = (await c.read("/proc/sys/kernel/random/boot_id")).toString().trim();
    await c.reboot();
    await node.exited;
    await node.stop({ removeDisk: false });
    node = await bootNode({ name: "journey-2-reboot", boot: "iso", disk, freshDisk: false });
    const after = node.mtlsClient(creds);
    await waitFor(node, "mTLS after reboot", () => after.version(), bootMs);
    const next = (await after.read("/proc/sys/kernel/random/boot_id")).toString().trim();
    assert.notEqual(next, bootId);
    bootId = next;
    assert.match(node.console(), /loaded stored configuration/);
  });

  await t.test("cold boot from the disk alone, legacy BIOS", async () => {
    await node.stop({ removeDisk: false });
    node = await bootNode({ name: "journey-3-cold-bios", boot: "disk", firmware: "bios", disk, freshDisk: false });
    const c = node.mtlsClient(creds);
    await waitFor(node, "mTLS after a cold BIOS boot", () => c.version(), bootMs);
    const res = (await c.resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname")) as ResourceReply;
    assert.match(res.resource.spec.yaml_spec, /hostname: journey-node/, "the live-applied config was stored");
  });

  await t.test("Reset of STATE and EPHEMERAL returns to maintenance mode", async () => {
    const c: NodeClient = node.mtlsClient(creds);
    await c.reset({ wipe: ["STATE", "EPHEMERAL"], reboot: true });
    await node.exited;
    await node.stop({ removeDisk: false });
    node = await bootNode({ name: "journey-4-reset", boot: "disk", disk, freshDisk: false });
    await expectMaintenance(node);
    assert.match(node.console(), /formatting STATE/);
  });
});
