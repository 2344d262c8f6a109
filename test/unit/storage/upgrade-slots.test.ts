import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import {
  entryTitle,
  parseBootSlots,
  renderBootSlots,
  renderGrubConfig,
  renderGrubenv,
  type BootSlots,
} from "../../../agent/src/storage/bootloader/grub.js";
import {
  abandonSlots,
  bootedLabel,
  confirmSlots,
  judgeBoot,
  planUpgrade,
  rollbackSlots,
  withoutSlot,
} from "../../../agent/src/storage/upgrade-slots.js";

const old = { version: "v1.7.6+basalt.0.1.0", cmdline: "talos.platform=metal console=ttyS0" };
const neu = { version: "v1.7.6+basalt.0.2.0", cmdline: "talos.platform=metal console=ttyS0 panic=10" };
const installed: BootSlots = { default: "A", entries: { A: old } };

describe("A/B slots", () => {
  it("reads back what it writes, first install and upgraded alike", () => {
    assert.deepEqual(
      parseBootSlots(
        renderGrubConfig({ current: "A", version: old.version, cmdline: old.cmdline, serialTerminal: true }),
      ),
      installed,
    );
    const both: BootSlots = {
      default: "B",
      fallback: "A",
      entries: { A: old, B: { version: "v2", cmdline: 'talos.config=http://x/?a=1&b=$2 "q"' } },
    };
    assert.deepEqual(parseBootSlots(renderBootSlots(both, false)), both);
    assert.equal(
      parseBootSlots('set default=0\nmenuentry "Basalt" {\n}\n'),
      undefined,
      "the ISO's menu is not an installed grub.cfg",
    );
  });

  it("upgrade writes the other slot, keeps the running one the default and asks GRUB to try the new one once", () => {
    const plan = planUpgrade(installed, neu);
    assert.equal(plan.target, "B");
    assert.equal(plan.previous, "A");
    assert.deepEqual(plan.slots, { default: "A", fallback: "B", entries: { A: old, B: neu } });
    assert.equal(plan.nextEntry, entryTitle("B", neu.version));
    const cfg = renderBootSlots(plan.slots, true);
    assert.match(cfg, /^set default="A - Basalt v1\.7\.6\+basalt\.0\.1\.0"\n/);
    // The one-time entry becomes the default with the last good one as its fallback.
    assert.match(
      cfg,
      /if \[ "\$\{next_entry\}" \]; then\n  set fallback="\$\{default\}"\n  set default="\$\{next_entry\}"\n  set next_entry=\n  save_env next_entry\nfi/,
    );
    // From B, the next upgrade goes to A.
    const again = planUpgrade(confirmSlots(plan.slots, "B"), old);
    assert.equal(again.target, "A");
    assert.equal(again.previous, "B");
  });

  it("judges a boot by META 0x06 and the slot booted", () => {
    assert.deepEqual(judgeBoot(undefined, "A"), { kind: "normal" });
    assert.deepEqual(judgeBoot("A", "B"), { kind: "trial", booted: "B", previous: "A" });
    assert.deepEqual(judgeBoot("A", "A"), { kind: "failed", booted: "A", failedSlot: "B" });
    assert.deepEqual(judgeBoot("A", undefined), { kind: "normal" }, "a boot from the ISO or PXE is no slot's");
    assert.deepEqual(judgeBoot("garbage", "B"), { kind: "normal" });
  });

  it("finds the booted slot in BOOT_IMAGE", () => {
    assert.equal(bootedLabel(new Map([["BOOT_IMAGE", ["/B/vmlinuz"]]])), "B");
    assert.equal(bootedLabel(new Map([["BOOT_IMAGE", ["(hd0,gpt3)/A/vmlinuz"]]])), "A");
    assert.equal(bootedLabel(new Map([["BOOT_IMAGE", ["/boot/vmlinuz"]]])), undefined);
    assert.equal(bootedLabel(new Map()), undefined);
  });

  it("confirm makes the new slot the default with the old as fallback; a failed trial forgets the new slot", () => {
    const trial = planUpgrade(installed, neu).slots;
    assert.deepEqual(confirmSlots(trial, "B"), { default: "B", fallback: "A", entries: { A: old, B: neu } });
    assert.deepEqual(abandonSlots(trial, "A"), { default: "A", entries: { A: old } });
  });

  it("the slot about to be rewritten leaves grub.cfg first (a power loss mid-write leaves nothing half-written to boot)", () => {
    const rolledBack: BootSlots = { default: "A", fallback: "B", entries: { A: old, B: neu } };
    assert.deepEqual(withoutSlot(rolledBack, "B"), { default: "A", entries: { A: old } });
    assert.deepEqual(withoutSlot({ default: "A", entries: { A: old, B: neu } }, "B"), {
      default: "A",
      entries: { A: old },
    });
    assert.deepEqual(withoutSlot(installed, "B"), installed);
    assert.throws(() => withoutSlot(rolledBack, "A"), /GRUB's default: it cannot be rewritten/);
  });

  it("rollback flips to the other slot and refuses when there is none", () => {
    const upgraded: BootSlots = { default: "B", fallback: "A", entries: { A: old, B: neu } };
    assert.deepEqual(rollbackSlots(upgraded), { default: "A", fallback: "B", entries: { A: old, B: neu } });
    assert.throws(() => rollbackSlots(installed), /has no slot B \(never upgraded/);
  });

  it("grubenv is GRUB's 1 KiB block", () => {
    const env = renderGrubenv({ next_entry: "B - Basalt v2" });
    assert.equal(env.length, 1024);
    assert.equal(env.toString().replace(/#+$/, ""), "# GRUB Environment Block\nnext_entry=B - Basalt v2\n");
    assert.equal(renderGrubenv({}).toString().replace(/#+$/, ""), "# GRUB Environment Block\n");
  });

  it("grub-editenv reads our grubenv and can clear it in place", {
    skip: fs.existsSync("/usr/bin/grub-editenv") ? false : "grub-editenv not installed",
  }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-grubenv-"));
    const file = path.join(dir, "grubenv");
    fs.writeFileSync(file, renderGrubenv({ next_entry: "B - Basalt v1.7.6+basalt.0.2.0" }));
    assert.equal(
      execFileSync("grub-editenv", [file, "list"], { encoding: "utf8" }),
      "next_entry=B - Basalt v1.7.6+basalt.0.2.0\n",
    );
    execFileSync("grub-editenv", [file, "unset", "next_entry"]);
    assert.equal(fs.statSync(file).size, 1024);
    assert.equal(execFileSync("grub-editenv", [file, "list"], { encoding: "utf8" }), "");
    fs.rmSync(dir, { recursive: true });
  });
});
