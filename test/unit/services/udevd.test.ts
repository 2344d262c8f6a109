import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { udevdService, writeUdevRules } from "../../../agent/src/services/definitions/udevd.js";

test("machine.udev.rules are written one per line, rewritten only on change, removed when gone", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-udev-"));
  try {
    const file = path.join(dir, "rules.d", "99-basalt.rules");
    const rules = [
      'SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="44", MODE="0660"',
      'ACTION=="add", SUBSYSTEM=="net", NAME="lan0"',
    ];
    assert.equal(await writeUdevRules(file, rules), true);
    assert.equal(readFileSync(file, "utf8"), rules.join("\n") + "\n");
    assert.equal(await writeUdevRules(file, rules), false, "unchanged: no reload");
    assert.equal(await writeUdevRules(file, []), true);
    assert.equal(existsSync(file), false);
    assert.equal(await writeUdevRules(file, []), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("udevd runs in Talos's /system/udevd group and is always restarted", () => {
  const def = udevdService({ udevadm: "/usr/bin/udevadm", controlSocket: "/run/udev/control" });
  assert.deepEqual([def.id, def.cgroup, def.restart, def.api], ["udevd", "/system/udevd", "always", undefined]);
});

test("udevd's first health probe triggers every subsystem and device in one udevadm and settles; later ones reload and settle", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-udevadm-"));
  try {
    // A stand-in udevadm that records each command line; the control socket only has to exist.
    const calls = path.join(dir, "calls");
    const udevadm = path.join(dir, "udevadm");
    writeFileSync(udevadm, `#!/bin/sh\necho "$*" >> ${calls}\n`);
    chmodSync(udevadm, 0o755);
    const controlSocket = path.join(dir, "control");
    const health = udevdService({ udevadm, controlSocket }).runner.health!;
    await assert.rejects(health(), /ENOENT/, "no control socket yet: not healthy, nothing triggered");
    assert.equal(existsSync(calls), false);
    writeFileSync(controlSocket, "");
    await health();
    assert.deepEqual(readFileSync(calls, "utf8").split("\n").filter(Boolean), [
      "trigger --type=all --action=add",
      "settle --timeout=50",
    ]);
    rmSync(calls);
    await health();
    assert.deepEqual(readFileSync(calls, "utf8").split("\n").filter(Boolean), [
      "control --reload",
      "settle --timeout=50",
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
