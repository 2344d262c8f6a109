import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import type { Koffi } from "../../../agent/src/sys/koffi.js";
import { KexecLoadError, kernelKexecLoader } from "../../../agent/src/sys/kexec.js";
import { initPower } from "../../../agent/src/sys/power.js";

/** A koffi whose syscall(2) records its arguments and answers `rc` with `errno`. */
function fakeKoffi(rc: number, errno = 0): { koffi: () => Koffi; calls: unknown[][] } {
  const calls: unknown[][] = [];
  const koffi: Koffi = {
    load: (lib) => {
      assert.equal(lib, "libc.so.6");
      return {
        func: (sig) => {
          assert.equal(sig, "long syscall(long number, ...)");
          return (...args: unknown[]) => {
            calls.push(args);
            return rc;
          };
        },
      };
    },
    errno: () => errno,
    struct: () => undefined,
  };
  return { koffi: () => koffi, calls };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-kexec-"));
const kernel = path.join(dir, "vmlinuz");
const initrd = path.join(dir, "initramfs.xz");
fs.writeFileSync(kernel, "k");
fs.writeFileSync(initrd, "i");
const nr = process.arch === "arm64" ? 294 : 320;

describe("kexec_file_load from machined", () => {
  it("passes both files' descriptors, the command line with its NUL counted, and no flags", async () => {
    const { koffi, calls } = fakeKoffi(0);
    await kernelKexecLoader(koffi).load(kernel, initrd, "BOOT_IMAGE=/B/vmlinuz console=ttyS0");
    assert.equal(calls.length, 1);
    const [number, , kfd, , ifd, , len, , cmdline, , flags] = calls[0]!;
    assert.equal(number, nr);
    assert.equal(typeof kfd, "number");
    assert.equal(typeof ifd, "number");
    assert.notEqual(kfd, ifd);
    assert.equal(len, "BOOT_IMAGE=/B/vmlinuz console=ttyS0".length + 1);
    assert.equal(cmdline, "BOOT_IMAGE=/B/vmlinuz console=ttyS0");
    assert.equal(flags, 0);
    assert.deepEqual(
      calls[0]!.filter((_, i) => i % 2 === 1),
      ["int", "int", "unsigned long", "const char *", "unsigned long"],
    );
  });

  it("without an initramfs: fd -1 and KEXEC_FILE_NO_INITRAMFS", async () => {
    const { koffi, calls } = fakeKoffi(0);
    await kernelKexecLoader(koffi).load(kernel, undefined, "x");
    assert.equal(calls[0]![4], -1);
    assert.equal(calls[0]![10], 4);
  });

  it("a kernel without kexec_file_load (ENOSYS, Debian's arm64) is a KexecLoadError that says so", async () => {
    const { koffi } = fakeKoffi(-1, 38);
    await assert.rejects(
      kernelKexecLoader(koffi).load(kernel, initrd, "x"),
      (err: unknown) => err instanceof KexecLoadError && /this kernel has no kexec_file_load/.test(err.message),
    );
  });

  it("a missing file is a KexecLoadError before any syscall", async () => {
    const { koffi, calls } = fakeKoffi(0);
    await assert.rejects(kernelKexecLoader(koffi).load(path.join(dir, "nothing"), initrd, "x"), KexecLoadError);
    assert.equal(calls.length, 0);
  });

  it("no FFI library is a KexecLoadError (the caller reboots through the firmware)", async () => {
    await assert.rejects(
      kernelKexecLoader(() => {
        throw new Error("no addon");
      }).load(kernel, initrd, "x"),
      /koffi\) is not available/,
    );
  });

  it("init is asked for a bare kexec only after machined loaded the kernel", async () => {
    const fifo = path.join(dir, "control");
    fs.writeFileSync(fifo, "");
    const loaded: string[] = [];
    const power = initPower(fifo, { load: async (k, i, c) => void loaded.push(`${k} ${i} ${c}`) });
    await power.loadKexec(kernel, initrd, "c");
    assert.deepEqual(loaded, [`${kernel} ${initrd} c`]);
    assert.equal(fs.readFileSync(fifo, "utf8"), "");
    await power.kexec();
    await power.request("reboot");
    assert.equal(fs.readFileSync(fifo, "utf8"), "kexec\nreboot\n");
  });
});
