// Kernel parameters as files: "proc.sys.<sysctl>" under /proc/sys, "sys.<path>" under /sys,
// with sysctl.d(5)'s separator rule (a first separator "." swaps dots and slashes, a
// first "/" keeps both), as Talos maps its keys.

import { constants, promises as fs } from "node:fs";
import path from "node:path";

const prefixes = ["proc.sys", "sys"] as const;

/** The file behind a key, e.g. "proc.sys.net.ipv4.conf.eth0/100.forwarding" → /proc/sys/net/ipv4/conf/eth0.100/forwarding. */
export function paramPath(key: string): string {
  let rest = key;
  let prefix = "";
  for (const p of prefixes) {
    if (key.startsWith(p + ".")) {
      rest = key.slice(p.length + 1);
      prefix = p;
      break;
    }
  }
  const first = rest.search(/[./]/);
  if (first !== -1 && rest[first] === ".") rest = rest.replace(/[./]/g, (c) => (c === "." ? "/" : "."));
  return path.posix.normalize("/" + path.posix.join(prefix.replaceAll(".", "/"), rest));
}

/** Reading and writing parameters; errors keep Node's `code` (ENOENT: the kernel has no such parameter). */
export interface KernelParams {
  read(key: string): Promise<string>;
  write(key: string, value: string): Promise<void>;
  /** Removes a parameter file (what Talos does to a parameter it set that had no previous value). */
  remove(key: string): Promise<void>;
}

/** The running kernel's parameters under `root` ("/" on a node). */
export function kernelParamsAt(root = "/"): KernelParams {
  const file = (key: string) => path.join(root, paramPath(key));
  return {
    read: (key) => fs.readFile(file(key), "utf8"),
    // Never created: a parameter the kernel does not have is ENOENT, as writing into /proc/sys is.
    write: (key, value) => fs.writeFile(file(key), value, { flag: constants.O_WRONLY | constants.O_TRUNC }),
    remove: (key) => fs.rm(file(key)),
  };
}

/**
 * For the sandbox, which must not change the host's kernel: parameters are read from the
 * host until written, and written to files under `dir` (a parameter the host lacks is missing here too).
 */
export function kernelParamsOverlay(dir: string, host: KernelParams = kernelParamsAt("/")): KernelParams {
  const file = (key: string) => path.join(dir, paramPath(key));
  return {
    read: (key) => fs.readFile(file(key), "utf8").catch(() => host.read(key)),
    write: async (key, value) => {
      await host.read(key);
      await fs.mkdir(path.dirname(file(key)), { recursive: true });
      await fs.writeFile(file(key), value);
    },
    remove: (key) => fs.rm(file(key), { force: true }),
  };
}
