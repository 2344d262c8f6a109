// The boot's shared root, on the host: in a mount namespace of its own (unshare), a private tmpfs
// made rshared by the system mounter carries its propagation to a mount made under it later, and a
// mount made in a bind of it (as the kubelet's container binds /var/lib/kubelet rshared) appears in
// the original: what a pod's projected volume needs to reach runc.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { repoRoot } from "../e2e/qemu.js";

const canRun = process.getuid?.() === 0;

test("a root made rshared propagates mounts made in a bind of it back to itself", {
  skip: canRun ? false : "needs root",
}, () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-shared-"));
  try {
    // The script runs in a private mount namespace, so nothing here touches the host's mounts.
    const script = `
      set -e
      mount -t tmpfs root ${work}
      mount --make-private ${work}
      node --input-type=module -e 'import { systemMounter } from "${repoRoot}/dist/agent/src/sys/mount.js"; await systemMounter().makeShared("${work}");'
      mkdir ${work}/var ${work}/kubelet
      mount -t tmpfs var ${work}/var
      mkdir ${work}/var/lib
      mount --rbind ${work}/var/lib ${work}/kubelet
      mkdir ${work}/kubelet/pod
      mount -t tmpfs token ${work}/kubelet/pod
      grep -c " ${work}/var/lib/pod " /proc/self/mountinfo
    `;
    const out = execFileSync("unshare", ["--mount", "--propagation", "private", "sh", "-c", script], {
      encoding: "utf8",
    });
    assert.equal(out.trim(), "1", "the tmpfs mounted in the bind appears at its source");
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
});
