import assert from "node:assert/strict";
import { test } from "node:test";
import type { MachineRuntime } from "../../../../agent/src/machined/runtime.js";
import { unmountPodMounts } from "../../../../agent/src/machined/tasks/ephemeral.js";
import type { MountEntry, Mounter } from "../../../../agent/src/sys/mount.js";

const entry = (target: string, fstype = "tmpfs"): MountEntry => ({ target, fstype, source: fstype, options: "rw" });

/** A mount table the fake's unmounts edit: the last entry at a target goes, and with it every mount below it. */
function fakeMounter(table: MountEntry[], unmounted: string[]): Mounter {
  return {
    mount: async () => assert.fail("mounted"),
    makeShared: async () => assert.fail("made shared"),
    list: () => [...table],
    unmount: async (target) => {
      const i = table.findLastIndex((m) => m.target === target);
      if (i < 0) throw new Error(`umount: ${target}: not mounted.`);
      if (table.some((m, j) => j > i && m.target.startsWith(`${target}/`)))
        throw new Error(`umount: ${target}: target is busy.`);
      table.splice(i, 1);
      unmounted.push(target);
    },
  };
}

test("unmountPodMounts: every mount below /var goes, deepest and latest first; /var and the rest stay", async () => {
  const pod = "/var/lib/kubelet/pods/7f3a/volumes/kubernetes.io~projected/kube-api-access-x2k";
  const table = [
    entry("/", "squashfs"),
    entry("/var", "xfs"),
    entry("/opt", "overlay"),
    entry("/var/lib/kubelet", "xfs"),
    entry(pod),
    entry("/var/lib/kubelet/pods/7f3a/volumes/kubernetes.io~empty-dir/cache"),
    entry("/var/lib/kubelet/pods/7f3a/volumes/kubernetes.io~empty-dir/cache"),
    entry("/variable"),
  ];
  const unmounted: string[] = [];
  const r = { paths: { var: "/var" }, mounter: fakeMounter(table, unmounted) };
  // The task reads only the paths and the mounter.
  await unmountPodMounts(r as unknown as MachineRuntime);
  assert.deepEqual(unmounted, [
    "/var/lib/kubelet/pods/7f3a/volumes/kubernetes.io~empty-dir/cache",
    "/var/lib/kubelet/pods/7f3a/volumes/kubernetes.io~empty-dir/cache",
    pod,
    "/var/lib/kubelet",
  ]);
  assert.deepEqual(
    table.map((m) => m.target),
    ["/", "/var", "/opt", "/variable"],
  );
});

test("unmountPodMounts: a mount that cannot go fails the task; one gone already is skipped", async () => {
  const table = [entry("/var", "xfs"), entry("/var/lib/kubelet/pods/a/volumes/v")];
  const busy: Mounter = {
    ...fakeMounter(table, []),
    unmount: async (target) => {
      throw new Error(`umount: ${target}: target is busy.`);
    },
  };
  const r = { paths: { var: "/var" }, mounter: busy };
  await assert.rejects(unmountPodMounts(r as unknown as MachineRuntime), /target is busy/);

  const listed = [entry("/var/a"), entry("/var/a/b")];
  const gone: string[] = [];
  const vanishing: Mounter = {
    ...fakeMounter([], gone),
    // The first unmount takes both away (as a propagated peer goes with its source): the second finds /var/a gone.
    list: () => [...listed],
    unmount: async (target) => {
      gone.push(target);
      listed.length = 0;
      if (target === "/var/a") throw new Error("umount: /var/a: not mounted.");
    },
  };
  await unmountPodMounts({ paths: { var: "/var" }, mounter: vanishing } as unknown as MachineRuntime);
  assert.deepEqual(gone, ["/var/a/b", "/var/a"]);
});
