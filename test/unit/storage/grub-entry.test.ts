import assert from "node:assert/strict";
import { test } from "node:test";
import { renderGrubConfig } from "../../../agent/src/storage/bootloader/grub.js";
import { defaultBootEntry, grubUnquote } from "../../../agent/src/storage/bootloader/grub-entry.js";

test("the default entry of a rendered grub.cfg is what a kexec boots, with its command line unquoted", () => {
  const cmdline = 'talos.platform=metal console=ttyS0 talos.config=http://10.0.2.2:8080/${uuid}?a=1&b="x"';
  const cfg = renderGrubConfig({ current: "B", fallback: "A", version: "v1", cmdline, serialTerminal: true });
  assert.deepEqual(defaultBootEntry(cfg), { label: "B", kernel: "B/vmlinuz", initrd: "B/initramfs.xz", cmdline });
  const first = renderGrubConfig({ current: "A", version: "v1", cmdline: "talos.platform=metal", serialTerminal: false });
  assert.deepEqual(defaultBootEntry(first), { label: "A", kernel: "A/vmlinuz", initrd: "A/initramfs.xz", cmdline: "talos.platform=metal" });
});

test("a grub.cfg without a default, or naming an entry it lacks, has no default entry", () => {
  assert.equal(defaultBootEntry("set timeout=3\n"), undefined);
  assert.equal(defaultBootEntry('set default="C - Basalt v1"\nmenuentry "A - Basalt v1" {\n  linux /A/vmlinuz x\n  initrd /A/initramfs.xz\n}\n'), undefined);
  assert.equal(grubUnquote("a\\$b\\\\c"), "a$b\\c");
});
