import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { writeUserFiles, UserFilesError } from "../../../../agent/src/machined/tasks/user-files.js";
import { pauseOnFailure } from "../../../../agent/src/machined/tasks/pause.js";
import type { MachineRuntime } from "../../../../agent/src/machined/runtime.js";

function scratchRoot(t: { after(fn: () => void): void }): string {
  const root = mkdtempSync(path.join(os.tmpdir(), "basalt-userfiles-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(path.join(root, "etc"), { recursive: true });
  writeFileSync(path.join(root, "etc", "motd"), "from the image");
  mkdirSync(path.join(root, "etc", "kubernetes", "manifests"), { recursive: true });
  return root;
}

test("create under /var, overwrite and append outside it written to /var/<path> and bound read-only over <path>, manifests in place, with their modes", async (t) => {
  const root = scratchRoot(t);
  const binds: string[] = [];
  await writeUserFiles(
    [
      { op: "create", path: "/var/lib/app/settings.conf", content: "a=1\n", permissions: 0o600 },
      { op: "overwrite", path: "/etc/motd", content: "replaced", permissions: 0o644 },
      { op: "append", path: "/etc/motd", content: "appended", permissions: 0o640 },
      { op: "create", path: "/etc/kubernetes/manifests/pod.yaml", content: "kind: Pod\n", permissions: 0o644 },
    ],
    {
      root,
      bindReadOnly: async (source, target) =>
        void binds.push(`${path.relative(root, source)} -> ${path.relative(root, target)}`),
    },
  );
  assert.equal(readFileSync(path.join(root, "var/lib/app/settings.conf"), "utf8"), "a=1\n");
  assert.equal(statSync(path.join(root, "var/lib/app/settings.conf")).mode & 0o7777, 0o600);
  // Append reads <path> itself (the image's file under the bind), as Talos does.
  assert.equal(readFileSync(path.join(root, "var/etc/motd"), "utf8"), "from the image\nappended");
  assert.equal(statSync(path.join(root, "var/etc/motd")).mode & 0o7777, 0o640);
  assert.equal(
    readFileSync(path.join(root, "etc/motd"), "utf8"),
    "from the image",
    "the image's file is never written",
  );
  assert.equal(readFileSync(path.join(root, "etc/kubernetes/manifests/pod.yaml"), "utf8"), "kind: Pod\n");
  assert.deepEqual(binds, ["var/etc/motd -> etc/motd", "var/etc/motd -> etc/motd"]);
});

test("a missing or non-regular file fails alone and the rest are written; create outside /var ends the task", async (t) => {
  const root = scratchRoot(t);
  await assert.rejects(
    writeUserFiles(
      [
        { op: "overwrite", path: "/etc/nosuchfile", content: "x", permissions: 0o644 },
        { op: "append", path: "/etc", content: "x", permissions: 0o644 },
        { op: "create", path: "/var/ok", content: "ok", permissions: 0o644 },
      ],
      { root },
    ),
    (err: Error) =>
      err instanceof UserFilesError &&
      err.message ===
        '2 file(s) not written: /etc/nosuchfile: file must exist: "/etc/nosuchfile"; /etc: invalid mode: "/etc" is not a regular file',
  );
  assert.equal(readFileSync(path.join(root, "var/ok"), "utf8"), "ok");

  await assert.rejects(
    writeUserFiles(
      [
        { op: "create", path: "/etc/new.conf", content: "x", permissions: 0o644 },
        { op: "create", path: "/var/after", content: "x", permissions: 0o644 },
      ],
      { root },
    ),
    { message: 'create operation not allowed outside of /var: "/etc/new.conf"' },
  );
  assert.equal(existsSync(path.join(root, "var/after")), false);
  assert.equal(existsSync(path.join(root, "var/etc/new.conf")), false);
});

test("pauseOnFailure: a failed task waits until the sequence is taken over, then fails; a task that works does not wait", async () => {
  const r = {} as MachineRuntime; // the wrapped tasks below do not read it
  const ac = new AbortController();
  let settled = false;
  const failing = pauseOnFailure("writeUserFiles", async () => Promise.reject(new Error("boom")), 3_600_000);
  const running = failing(r, ac.signal)
    .catch((err: Error) => err.message)
    .finally(() => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(settled, false, "paused");
  ac.abort();
  assert.equal(await running, "boom");
  await pauseOnFailure("ok", async () => undefined, 3_600_000)(r, new AbortController().signal);
});

test("/etc/cri/conf.d/20-customization.part is left to the CRI configuration, which merges it: no file, no error", async (t) => {
  const root = scratchRoot(t);
  const binds: string[] = [];
  await writeUserFiles(
    [
      {
        op: "create",
        path: "/etc/cri/conf.d/20-customization.part",
        content: '[plugins."io.containerd.grpc.v1.cri"]\n',
        permissions: 0o644,
      },
    ],
    { root, bindReadOnly: async (source, target) => void binds.push(`${source} -> ${target}`) },
  );
  assert.equal(existsSync(path.join(root, "etc/cri")), false);
  assert.equal(existsSync(path.join(root, "var/etc/cri")), false);
  assert.deepEqual(binds, []);
});
