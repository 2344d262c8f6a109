import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { mountStats, parseProcMounts } from "../../../../agent/src/machined/rpc/mounts.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-mounts-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("/proc/mounts lines: source and mount point, escapes kept as the kernel wrote them", () => {
  assert.deepEqual(parseProcMounts("/dev/vda5 /var xfs rw 0 0\nfoo /mnt/a\\040b ext4 rw 0 0\n\n"), [
    { filesystem: "/dev/vda5", mountedOn: "/var" },
    { filesystem: "foo", mountedOn: "/mnt/a\\040b" },
  ]);
});

test("each mount with statfs size and available space; a mount point that is not a directory has zeros", async () => {
  const file = path.join(dir, "mounts");
  writeFileSync(path.join(dir, "not-a-dir"), "");
  writeFileSync(
    file,
    `rootfs / rootfs rw 0 0\nproc /proc proc rw 0 0\nbind ${path.join(dir, "not-a-dir")} none rw 0 0\ngone /no/such/place tmpfs rw 0 0\n`,
  );
  const reply = await mountStats(file);
  const stats = reply.messages[0]!.stats;
  assert.deepEqual(
    stats.map((s) => [s.filesystem, s.mounted_on]),
    [
      ["rootfs", "/"],
      ["proc", "/proc"],
      ["bind", path.join(dir, "not-a-dir")],
      ["gone", "/no/such/place"],
    ],
  );
  const fs = statfsSync("/");
  assert.equal(stats[0]!.size, fs.blocks * fs.bsize);
  assert.ok(stats[0]!.size > 0 && stats[0]!.available > 0 && stats[0]!.available <= stats[0]!.size);
  assert.deepEqual([stats[2]!.size, stats[2]!.available, stats[3]!.size, stats[3]!.available], [0, 0, 0, 0]);
});
