// The upgrade journey with one machine, against a real registry (Debian's docker-registry
// on the host, which the guest reaches at 10.0.2.2): a PXE boot (no ISO) installs from
// machine.install.image and comes back from the disk; Upgrade to this
// build's installer pushed under a new tag (kexec into slot B, confirmed once ready, the
// config kept); Rollback to slot A; power lost while an Upgrade writes slot B (QEMU killed
// the moment the console says the write began): the node comes back in slot A, ready, its
// config kept, slot B no longer offered; an Upgrade to an installer whose initramfs is truncated
// (the kernel panics in slot B) and one to an installer whose machined exits at start (init
// reboots after its restarts): each fails exactly once in slot B (the kexec; GRUB's one-time
// entry went when the kexec was loaded) and the next boot is slot A, ready, the console saying why.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { parse, parseDocument } from "yaml";
import { readyForTrial } from "../../agent/src/machined/upgrade-trial.js";
import type { MachineStatusSpec } from "../../agent/src/resources/catalog/runtime.js";
import { ApplyMode } from "../../agent/src/api/enums.js";
import type { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { RepositoryClient } from "../../agent/src/oci/client.js";
import { registryEndpoints } from "../../agent/src/oci/hosts.js";
import { buildInstallerArchive } from "../../agent/src/oci/installer.js";
import { LayoutArchive } from "../../agent/src/oci/layout.js";
import { registryBinary, startRegistry } from "../integration/helpers/registry.js";
import {
  artifactsPresent,
  bootNode,
  journeySteps,
  consoleReport,
  repoRoot,
  sequenceFailed,
  waitExit,
  waitFor,
  type BootedNode,
} from "./qemu.js";

// Generous: on a shared 2-core host a TCG boot has taken 7 minutes of kernel uptime.
const bootMs = 1_200_000;
// Install from PXE also pulls the ~90 MB installer inside the guest: 10 minutes of it on that host.
const installMs = 2_400_000;
// Upgrade answers once the installer is pulled: 145 s of it inside a TCG guest on a loaded host.
const pullMs = 900_000;
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
  const listed = await c.collect<ResourceItem>(
    c.cosi,
    "List",
    { namespace: "runtime", type: "MetaKeys.runtime.talos.dev" },
    10_000,
  );
  return new Map(listed.map((r) => [r.resource.metadata.id, /value: (.*)/.exec(r.resource.spec.yaml_spec)?.[1] ?? ""]));
}

function bootImages(consoleText: string): string[] {
  return [...consoleText.matchAll(/Kernel command line: BOOT_IMAGE=(\S+)/g)].map((m) => m[1]!);
}

/**
 * Kills QEMU (a power loss) as soon as console text printed from now on matches `line`: the console file is
 * read as it grows, every 20 ms. Resolves, once QEMU is gone, with all the console printed from now on.
 */
async function killWhenConsoleSays(node: BootedNode, line: RegExp, timeoutMs: number): Promise<string> {
  const start = fs.statSync(node.serialLog).size;
  let exited = false;
  void node.exited.then(() => (exited = true));
  const deadline = Date.now() + timeoutMs;
  const fd = fs.openSync(node.serialLog, "r");
  try {
    let offset = start;
    let text = "";
    while (!line.test(text)) {
      if (exited || Date.now() > deadline) throw new Error(`the console never said ${line}\n${consoleReport(node)}`);
      await sleep(20);
      const size = fs.fstatSync(fd).size;
      if (size <= offset) continue;
      const chunk = Buffer.alloc(size - offset);
      offset += fs.readSync(fd, chunk, 0, chunk.length, offset);
      text += chunk.toString("utf8");
    }
  } finally {
    fs.closeSync(fd);
  }
  await node.stop({ removeDisk: false });
  return fs.readFileSync(node.serialLog).subarray(start).toString("utf8");
}

/** A newc cpio (the host's cpio) holding only agent/basalt.mjs with `script`. */
function agentReplacement(dir: string, script: string): Buffer {
  fs.mkdirSync(path.join(dir, "agent"), { recursive: true });
  fs.writeFileSync(path.join(dir, "agent", "basalt.mjs"), script);
  return execFileSync("cpio", ["-o", "-H", "newc", "-R", "0:0", "--quiet"], {
    cwd: dir,
    input: "agent\nagent/basalt.mjs\n",
  });
}

const skip =
  artifactsPresent() && fs.existsSync(installer) && fs.existsSync(registryBinary)
    ? false
    : "image or installer not built (npm run image), or docker-registry missing";

test("upgrade journey: install → Upgrade (slot B) → Rollback (slot A) → power lost mid-write (slot A) → broken Upgrades back on slot A", {
  skip,
  timeout: 90 * 60_000,
}, async (t) => {
  fs.rmSync(work, { recursive: true, force: true });
  const registry = await startRegistry(path.join(work, "registry"), { plain: true });
  t.after(() => registry.stop());
  const port = registry.host.split(":")[1]!;
  const guestHost = `10.0.2.2:${port}`;
  const repo = new RepositoryClient(
    registryEndpoints({ mirrors: { [registry.host]: { endpoints: [`http://${registry.host}`] } } }, registry.host)[0]!,
    "basalt/installer",
  );
  await (await LayoutArchive.open(installer)).push(repo, "upgrade-1");
  // The broken installer: this build's kernel with the initramfs cut in half.
  const truncated = path.join(work, "initramfs-truncated.xz");
  const initramfs = fs.readFileSync(path.join(out, "initramfs-amd64.xz"));
  fs.writeFileSync(truncated, initramfs.subarray(0, Math.floor(initramfs.length / 2)));
  await buildInstallerArchive(path.join(work, "broken.tar"), "broken", [
    { arch: "amd64", kernel: path.join(out, "vmlinuz-amd64"), initramfs: truncated },
  ]);
  await (await LayoutArchive.open(path.join(work, "broken.tar"))).push(repo, "broken");
  // An installer whose machined exits at start: this build's initramfs with one more cpio appended, whose
  // agent/basalt.mjs replaces the bundle (the kernel unpacks the archives in order, a later file over an earlier one).
  const exiting = path.join(work, "initramfs-machined-exits.xz");
  fs.writeFileSync(
    exiting,
    Buffer.concat([
      initramfs,
      Buffer.alloc((4 - (initramfs.length % 4)) % 4),
      agentReplacement(
        path.join(work, "exiting-agent"),
        'console.error("machined: exiting at start on purpose");\nprocess.exit(1);\n',
      ),
    ]),
  );
  await buildInstallerArchive(path.join(work, "machined-exits.tar"), "machined-exits", [
    { arch: "amd64", kernel: path.join(out, "vmlinuz-amd64"), initramfs: exiting },
  ]);
  await (await LayoutArchive.open(path.join(work, "machined-exits.tar"))).push(repo, "machined-exits");

  const generated = await generateConfigs({
    clusterName: "upgrade",
    endpoint: "https://10.0.2.15:6443",
    installDisk: "/dev/vda",
  });
  const doc = parseDocument(generated.controlplane);
  // The node names the registry as the guest sees the host; plain HTTP is a mirror endpoint, as Talos users write it.
  doc.setIn(["machine", "registries", "mirrors", guestHost], { endpoints: [`http://${guestHost}`] });
  doc.setIn(["machine", "network", "hostname"], "upgrade-node");
  // The guest reaches no NTP server; with sync off its clock (QEMU's, from the host) counts as synced and the node gets ready.
  doc.setIn(["machine", "time", "disabled"], true);
  doc.setIn(["machine", "install", "image"], `${guestHost}/basalt/installer:upgrade-1`);
  const config = doc.toString();
  const creds = parseTalosconfig(generated.talosconfig);

  let node: BootedNode = await bootNode({ name: "upgrade-1-pxe", boot: "pxe", disk, netOpen: true });
  t.after(() => node.stop({ removeDisk: true }));
  const admin = () => node.mtlsClient(creds);
  // Boots the disk again once QEMU has exited (the guest rebooted: -no-reboot).
  const reboot = async (name: string) => {
    await node.stop({ removeDisk: false });
    node = await bootNode({ name, boot: "disk", disk, freshDisk: false, netOpen: true });
  };

  const step = journeySteps(t);
  // A node under load can take longer than one call's deadline to answer: reads after a boot are retried.
  const slotOf = () => waitFor(node, "the booted slot (Read /proc/cmdline)", () => bootedSlot(admin()), bootMs);

  // It comes back from the disk's kernel (kexec); the failed upgrades below boot the disk through GRUB.
  await step("a PXE boot installs from machine.install.image and comes back from the disk in slot A", async () => {
    await waitFor(node, "maintenance API", () => node.client().disks(), bootMs);
    const insecure = node.client();
    // Not retried (a second apply would meet a node already installing): one call with a deadline a loaded guest meets.
    await insecure.unary(
      insecure.machine,
      "ApplyConfiguration",
      { data: Buffer.from(config), mode: ApplyMode.REBOOT, dry_run: false },
      300_000,
    );
    await waitFor(node, "mTLS after install", () => admin().version(), installMs, { failOn: sequenceFailed });
    assert.equal(await slotOf(), "A");
    assert.match(node.console(), /no boot medium: installing from machine.install.image/);
    assert.match(node.console(), /installer pulled/);
  });

  await step(
    "Upgrade pulls from the registry, kexecs into slot B and confirms it once ready; the config is kept",
    async () => {
      const c = admin();
      const bootId = (await waitFor(node, "boot_id", () => c.read("/proc/sys/kernel/random/boot_id"), bootMs))
        .toString()
        .trim();
      const reply = await c.unary<{ messages: { ack: string; actor_id: string }[] }>(
        c.machine,
        "Upgrade",
        { image: `${guestHost}/basalt/installer:upgrade-1` },
        pullMs,
      );
      assert.equal(reply.messages[0]!.ack, "Upgrade request received");
      await waitFor(
        node,
        "a new boot after the upgrade",
        async () => {
          const now = (await admin().read("/proc/sys/kernel/random/boot_id")).toString().trim();
          if (now === bootId) throw new Error("still the old boot");
        },
        bootMs,
        { failOn: sequenceFailed },
      );
      await waitFor(
        node,
        "the upgrade confirmed (META 0x06 gone)",
        async () => {
          const keys = await metaKeys(admin());
          if (keys.has("0x06")) throw new Error(`META 0x06 = ${keys.get("0x06")}`);
        },
        bootMs,
      );
      assert.equal(await slotOf(), "B");
      const hostname = await waitFor(
        node,
        "HostnameStatus",
        () => admin().resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname") as Promise<ResourceReply>,
        bootMs,
      );
      assert.match(hostname.resource.spec.yaml_spec, /hostname: upgrade-node/);
      assert.match(node.console(), /upgrade confirmed: slot B is GRUB's default, slot A its fallback/);
    },
  );

  // Rollback reboots as Reboot does: a kexec of GRUB's new default, in the same VM.
  await step("Rollback reboots into slot A", async () => {
    const c = admin();
    const bootId = (await waitFor(node, "boot_id", () => c.read("/proc/sys/kernel/random/boot_id"), bootMs))
      .toString()
      .trim();
    await c.unary(c.machine, "Rollback", {}, 120_000);
    await waitFor(
      node,
      "a new boot after the rollback",
      async () => {
        const now = (await admin().read("/proc/sys/kernel/random/boot_id")).toString().trim();
        if (now === bootId) throw new Error("still the old boot");
      },
      bootMs,
      { failOn: sequenceFailed },
    );
    assert.equal(await slotOf(), "A");
  });

  // Slot A is ready in this boot as far as the system answers for (the trial's rule: this registry holds no
  // Kubernetes images and nobody bootstraps, so etcd and the kubelet do not run), with its config and no upgrade pending.
  const readyInA = async () => {
    assert.equal(await slotOf(), "A");
    await waitFor(
      node,
      "ready",
      async () => {
        const status = (await admin().resourceGet(
          "runtime",
          "MachineStatuses.runtime.talos.dev",
          "machine",
        )) as ResourceReply;
        // MachineStatus's YAML has the spec's own keys (stage, status.ready, status.unmetConditions).
        const spec = parse(status.resource.spec.yaml_spec) as MachineStatusSpec;
        assert.ok(spec.stage === "running" && readyForTrial(spec), status.resource.spec.yaml_spec);
      },
      bootMs,
    );
    const hostname = await waitFor(
      node,
      "HostnameStatus",
      () => admin().resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname") as Promise<ResourceReply>,
      bootMs,
    );
    assert.match(hostname.resource.spec.yaml_spec, /hostname: upgrade-node/);
    assert.equal((await waitFor(node, "MetaKeys", () => metaKeys(admin()), bootMs)).has("0x06"), false);
  };

  // QEMU is killed (power lost) the moment the console says the write into slot B began; the write (~84 MB with
  // fsyncs) takes seconds inside the guest, the kill milliseconds after the line reaches the console file.
  await step(
    "power lost while Upgrade writes slot B: the node comes back in slot A, ready, config kept, slot B no longer offered",
    async () => {
      const c = admin();
      const began = /upgrade: writing the new system into its slot \{"slot":"B"/;
      const killed = killWhenConsoleSays(node, began, pullMs + 120_000);
      killed.catch(() => undefined); // awaited below unless the Upgrade call fails first
      const failed = await c
        .unary(c.machine, "Upgrade", { image: `${guestHost}/basalt/installer:upgrade-1` }, pullMs)
        .then(
          () => undefined,
          (err: { code?: number }) => err,
        );
      // The reply leaves before the write begins, but the kill may overtake it on the way: then the call is UNAVAILABLE.
      if (failed && failed.code !== 14) throw failed;
      const text = await killed;
      assert.doesNotMatch(text, /new system written to its slot/, "QEMU was killed before the write ended");
      node = await bootNode({ name: "upgrade-power-lost", boot: "disk", disk, freshDisk: false, netOpen: true });
      await waitFor(node, "slot A's API after the power loss", () => admin().version(), bootMs);
      await readyInA();
      assert.doesNotMatch(node.console(), /UPGRADE FAILED/, "no upgrade was recorded: the power went before META 0x06");
      // grub.cfg forgot slot B before its files were touched: Rollback has nothing to go back to.
      await assert.rejects(
        admin().unary(admin().machine, "Rollback", {}, 120_000),
        (err: { code?: number; message: string }) => err.code === 9 && /has no slot B/.test(err.message),
      );
    },
  );

  // An Upgrade to a broken installer fails exactly once in slot B: the kexec in this VM ends in a reboot (QEMU
  // exits); GRUB's one-time entry went once the kexec was loaded, so the next boot, from the disk, is GRUB's
  // default, A, which says why and is ready.
  const failedUpgrade = async (tag: string, failure: string, name: string) => {
    const c = admin();
    const from = node.console().length;
    await c.unary(c.machine, "Upgrade", { image: `${guestHost}/basalt/installer:${tag}` }, pullMs);
    await waitExit(node, `the kexec into slot B failing (${failure})`, bootMs);
    const tried = node.console().slice(from);
    assert.match(tried, /kexec into the new system \{"slot":"B"\}/);
    assert.deepEqual(bootImages(tried), ["/B/vmlinuz"], "the kexec: one boot of slot B");
    assert.ok(tried.includes(failure), `the kexec: the console says "${failure}"`);
    await reboot(`${name}-2`);
    await waitFor(node, "slot A's API after the failed upgrade", () => admin().version(), bootMs);
    assert.deepEqual(bootImages(node.console()), ["/A/vmlinuz"], "the firmware's next boot is GRUB's default, slot A");
    assert.match(node.console(), /UPGRADE FAILED: the new system in slot B did not reach Running and ready/);
    await readyInA();
  };

  await step("an installer with a truncated initramfs: the node comes back on slot A, ready, and says why", () =>
    failedUpgrade("broken", "Kernel panic", "upgrade-3-broken"),
  );

  await step(
    "an installer whose machined exits at start: init gives up and reboots, the node comes back on slot A",
    () => failedUpgrade("machined-exits", "machined failed 3 times in a row", "upgrade-4-machined-exits"),
  );
});
