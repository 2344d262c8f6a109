import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { entryTitle, grubQuote, renderGrubConfig } from "../../../agent/src/storage/bootloader/grub.js";

function hasTool(name: string): boolean {
  try {
    execFileSync("which", [name], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

describe("grub.cfg", () => {
  it("names entries as Talos does, with Basalt's name", () => {
    assert.equal(entryTitle("B", "v0.1.0"), "B - Basalt v0.1.0");
  });

  it("boots the current label by default, falls back to the other, and offers the reset entry", () => {
    const cfg = renderGrubConfig({
      current: "B",
      fallback: "A",
      version: "v0.2.0",
      cmdline: "talos.platform=metal console=ttyS0",
      serialTerminal: true,
    });
    assert.match(cfg, /^set default="B - Basalt v0.2.0"\nset fallback="A - Basalt v0.2.0"\nset timeout=3\n/);
    assert.match(cfg, /terminal_input console serial\nterminal_output console serial\n/);
    const titles = [...cfg.matchAll(/menuentry "([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(titles, [
      "A - Basalt v0.2.0",
      "B - Basalt v0.2.0",
      "Reset Basalt installation and return to maintenance mode",
    ]);
    assert.match(
      cfg,
      /menuentry "B - Basalt v0.2.0" \{\n[^}]*linux \/B\/vmlinuz talos.platform=metal console=ttyS0\n  initrd \/B\/initramfs.xz\n\}/,
    );
    assert.match(
      cfg,
      /menuentry "Reset[^{]*\{[^}]*linux \/B\/vmlinuz talos.platform=metal console=ttyS0 talos.experimental.wipe=system:EPHEMERAL,STATE\n  initrd \/B\/initramfs.xz/,
    );
  });

  it("has no fallback on a first install", () => {
    const cfg = renderGrubConfig({ current: "A", version: "v0.1.0", cmdline: "x=1", serialTerminal: true });
    assert.doesNotMatch(cfg, /^set fallback/m);
    assert.equal([...cfg.matchAll(/menuentry /g)].length, 2);
  });

  it("leaves the serial port out where the firmware's console already is one (arm64)", () => {
    const cfg = renderGrubConfig({
      current: "A",
      version: "v0.1.0",
      cmdline: "console=ttyAMA0",
      serialTerminal: false,
    });
    assert.doesNotMatch(cfg, /serial/);
    assert.match(cfg, /insmod all_video\nterminal_input console\nterminal_output console\n/);
  });

  it("quotes what GRUB's parser would interpret", () => {
    assert.equal(grubQuote('a=$x;b={c}|"d"&<e>\\'), 'a=\\$x\\;b=\\{c\\}\\|\\"d\\"\\&\\<e\\>\\\\');
  });

  it("is valid GRUB script", { skip: hasTool("grub-script-check") ? false : "grub-script-check not installed" }, () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "basalt-grub-")), "grub.cfg");
    fs.writeFileSync(
      file,
      renderGrubConfig({
        current: "A",
        fallback: "B",
        version: "v1",
        cmdline: "talos.config=http://x/?a=1&b=$2 console=ttyS0",
        serialTerminal: true,
      }),
    );
    execFileSync("grub-script-check", [file]);
    fs.rmSync(path.dirname(file), { recursive: true });
  });
});
