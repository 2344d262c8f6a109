import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { runTool } from "./exec.js";

/** One line of /proc/self/mountinfo that machined cares about. */
export interface MountEntry {
  source: string;
  target: string;
  fstype: string;
  options: string;
}

/** mount(8) and umount(8): the kernel's mount(2) behind util-linux, which also loads filesystem modules. */
export interface Mounter {
  mount(source: string, target: string, fstype: string, options?: string[]): Promise<void>;
  unmount(target: string): Promise<void>;
  /** Makes `target` and every mount under it shared (MS_SHARED|MS_REC, `mount --make-rshared`). */
  makeShared(target: string): Promise<void>;
  list(): MountEntry[];
}

/** Decodes mountinfo's octal escapes (\040 for a space). */
function unescapeOctal(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

export function parseMountinfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split("\n")) {
    const [left, right] = line.split(" - ");
    if (!left || !right) continue;
    const l = left.split(" ");
    const r = right.split(" ");
    out.push({
      target: unescapeOctal(l[4] ?? ""),
      options: l[5] ?? "",
      fstype: r[0] ?? "",
      source: unescapeOctal(r[1] ?? ""),
    });
  }
  return out;
}

// How mount(8) and umount(8) word EBUSY.
const busy = /already mounted or mount point busy|target is busy/;

/**
 * Runs a mount tool, retrying every 100 ms for 5 s while the kernel answers EBUSY, as
 * Talos's mount points do: a device just released (unmounted, mkfs'd, probed by udev)
 * can stay claimed for a moment.
 */
async function retryBusy(command: string, args: string[]): Promise<void> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      await runTool(command, args);
      return;
    } catch (err) {
      if (!(err instanceof Error) || !busy.test(err.message) || Date.now() > deadline) throw err;
      await sleep(100);
    }
  }
}

export function systemMounter(mountinfo = "/proc/self/mountinfo"): Mounter {
  return {
    async mount(source, target, fstype, options = []) {
      await retryBusy("mount", ["-t", fstype, ...(options.length ? ["-o", options.join(",")] : []), source, target]);
    },
    async unmount(target) {
      await retryBusy("umount", [target]);
    },
    async makeShared(target) {
      await runTool("mount", ["--make-rshared", target]);
    },
    list: () => parseMountinfo(readFileSync(mountinfo, "utf8")),
  };
}
