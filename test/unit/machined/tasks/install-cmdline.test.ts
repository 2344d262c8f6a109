// The installed system's kernel arguments: this boot's, less the one-shot ones. Talos's
// install carries net.ifnames= over the same way (its preserved kernel arguments), so a
// node booted with net.ifnames=0 keeps the kernel's link names once installed.

import assert from "node:assert/strict";
import { test } from "node:test";
import { installedCmdline } from "../../../../agent/src/machined/tasks/install.js";
import { parseCmdline } from "../../../../agent/src/machined/platform.js";

test("installed cmdline: net.ifnames=0 and the console kept; BOOT_IMAGE, initrd, talos.config and the wipe request dropped", () => {
  const booted = parseCmdline(
    "BOOT_IMAGE=/boot/vmlinuz initrd=/boot/initramfs.xz console=ttyS0 net.ifnames=0 talos.config=http://10.0.2.2/c talos.experimental.wipe=system quiet talos.platform=metal",
  );
  assert.equal(installedCmdline(booted), "console=ttyS0 net.ifnames=0 quiet talos.platform=metal");
});
