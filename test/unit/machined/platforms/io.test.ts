// The node's PlatformIo: the network and the user data are read side by side, and each may
// mount a device on the one mount point; the second read waits for the first to unmount.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { logger } from "../../../../agent/src/log.js";
import { nodePlatformIo } from "../../../../agent/src/machined/platforms/io.js";
import {
  DevicesStatusId,
  DevicesStatusType,
  RUNTIME_NAMESPACE,
} from "../../../../agent/src/resources/catalog/runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import type { Mounter } from "../../../../agent/src/sys/mount.js";

const work = mkdtempSync(path.join(os.tmpdir(), "basalt-platform-io-"));
after(() => rmSync(work, { recursive: true, force: true }));

/** A mounter that, as the kernel, refuses a second mount on a busy mount point; a mount "shows" the device's file there. */
function oneMountPoint(file: string, content: string) {
  const mounted = new Set<string>();
  const seen: string[] = [];
  const mounter: Mounter = {
    mount: async (source, target) => {
      if (mounted.has(target)) throw new Error(`mount: ${target}: ${source} already mounted`);
      mounted.add(target);
      seen.push(`mount ${path.basename(source)}`);
      await fs.writeFile(path.join(target, file), content);
      // The kernel takes a while to mount an ISO: long enough for another read to come.
      await sleep(20);
    },
    unmount: async (target) => {
      await fs.rm(path.join(target, file));
      mounted.delete(target);
      seen.push("unmount");
    },
    makeShared: async () => assert.fail("nothing to share"),
    list: () => [],
  };
  return { mounter, seen };
}

test("two reads of a provisioning CD at once: each mounts in turn and both get the file", async () => {
  const devDir = path.join(work, "dev");
  await fs.mkdir(devDir, { recursive: true });
  writeFileSync(path.join(devDir, "sr0"), "");
  const state = new ResourceState();
  state.modify(RUNTIME_NAMESPACE, DevicesStatusType, DevicesStatusId, "runtime.DevicesStatusController", () => ({
    ready: true,
  }));
  const { mounter, seen } = oneMountPoint("ovf-env.xml", "<Environment/>");
  const io = nodePlatformIo({
    state,
    mounter,
    mountDir: path.join(work, "mnt"),
    devDir,
    signal: new AbortController().signal,
    cmdline: new Map(),
    log: logger("test"),
  });

  const [first, second] = await Promise.all([
    io.readDeviceFile(/^sr\d+$/, "udf", "ovf-env.xml"),
    io.readDeviceFile(/^sr\d+$/, "udf", "ovf-env.xml"),
  ]);
  assert.equal(first?.files.get("ovf-env.xml")?.toString(), "<Environment/>");
  assert.equal(second?.files.get("ovf-env.xml")?.toString(), "<Environment/>");
  assert.deepEqual(seen, ["mount sr0", "unmount", "mount sr0", "unmount"]);
});
