// The pods' mounts at shutdown, on the host: in a mount namespace of its own (unshare), EPHEMERAL's
// stand-in holds a kubelet volume stacked on an emptyDir and a bind of it, as a stopped kubelet leaves
// them; unmountPodMounts with the system mounter takes them all, so /var itself unmounts.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { repoRoot } from "../e2e/qemu.js";

const canRun = process.getuid?.() === 0;

test("unmountPodMounts leaves nothing below /var, so EPHEMERAL unmounts", {
  skip: canRun ? false : "needs root",
}, () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-pod-mounts-"));
  try {
    const v = `${work}/var`;
    const pod = `${v}/lib/kubelet/pods/7f3a/volumes`;
    const task = `
      import { systemMounter } from "${repoRoot}/dist/agent/src/sys/mount.js";
      import { unmountPodMounts } from "${repoRoot}/dist/agent/src/machined/tasks/ephemeral.js";
      await unmountPodMounts({ paths: { var: "${v}" }, mounter: systemMounter() });`;
    // The script runs in a private mount namespace, so nothing here touches the host's mounts.
    const script = `
      set -e
      mkdir ${v}
      mount -t tmpfs ephemeral ${v}
      mount --make-rshared ${v}
      mkdir -p ${pod}/empty-dir ${pod}/token ${v}/lib/kubelet/plugins
      mount -t tmpfs cache ${pod}/empty-dir
      mount -t tmpfs token ${pod}/token
      mkdir ${pod}/empty-dir/nested
      mount -t tmpfs nested ${pod}/empty-dir/nested
      mount --rbind ${pod} ${v}/lib/kubelet/plugins
      node --input-type=module -e '${task}'
      grep -c " ${v}/" /proc/self/mountinfo || true
      umount ${v}
      echo unmounted
    `;
    const out = execFileSync("unshare", ["--mount", "--propagation", "private", "sh", "-c", script], {
      encoding: "utf8",
    });
    assert.deepEqual(out.trim().split("\n"), ["0", "unmounted"]);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
});
