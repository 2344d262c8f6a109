// MachineService.Processes (talosctl processes): one ProcessInfo per /proc/<pid> whose
// executable link resolves. As on Talos, kernel threads and zombies (no exe), processes
// with an empty command line and those gone mid-read are left out, and the command line
// is cut at 16 KiB.

import { promises as fs, readFileSync } from "node:fs";
import path from "node:path";
import { parsePidStat, userHz } from "../../sys/procfs.js";
import { pathError } from "./errno.js";

const cmdlineLimit = 16 * 1024;
const AT_PAGESZ = 6;

/** The page size the kernel gave this process (the auxiliary vector's AT_PAGESZ); Node has no getpagesize. */
export function pageSize(auxv: Buffer = readFileSync("/proc/self/auxv")): number {
  for (let i = 0; i + 16 <= auxv.length; i += 16) {
    if (auxv.readBigUInt64LE(i) === BigInt(AT_PAGESZ)) return Number(auxv.readBigUInt64LE(i + 8));
  }
  return 4096;
}

let cachedPageSize: number | undefined;

export interface ProcessInfo {
  pid: number;
  ppid: number;
  state: string;
  threads: number;
  cpu_time: number;
  virtual_memory: number;
  resident_memory: number;
  command: string;
  executable: string;
  args: string;
}

async function readHead(file: string, limit: number): Promise<Buffer> {
  const fh = await fs.open(file, "r");
  try {
    const buf = Buffer.alloc(limit);
    const { bytesRead } = await fh.read(buf, 0, limit, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** One process, or undefined when it cannot be described (gone, kernel thread, zombie). */
export async function readProcess(procRoot: string, pid: number, pageBytes: number): Promise<ProcessInfo | undefined> {
  const dir = path.join(procRoot, String(pid));
  try {
    const executable = await fs.readlink(path.join(dir, "exe"));
    const command = (await fs.readFile(path.join(dir, "comm"), "utf8")).trim();
    const cmdline = await readHead(path.join(dir, "cmdline"), cmdlineLimit);
    if (cmdline.length === 0) return undefined;
    const stat = parsePidStat(await fs.readFile(path.join(dir, "stat"), "utf8"));
    if (!stat) return undefined;
    return {
      pid,
      ppid: stat.ppid,
      state: stat.state,
      threads: stat.threads,
      cpu_time: (stat.utime + stat.stime) / userHz,
      virtual_memory: stat.vsize,
      resident_memory: stat.rssPages * pageBytes,
      command,
      executable,
      args: cmdline.toString("utf8").replace(/\0+$/, "").replaceAll("\0", " "),
    };
  } catch {
    return undefined;
  }
}

export async function processes(procRoot = "/proc") {
  cachedPageSize ??= pageSize();
  const names = await fs.readdir(procRoot).catch((err: unknown) => {
    throw pathError("open", procRoot, err);
  });
  const pids = names
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .sort((a, b) => a - b);
  const infos = await Promise.all(pids.map((pid) => readProcess(procRoot, pid, cachedPageSize!)));
  return { messages: [{ processes: infos.filter((p): p is ProcessInfo => p !== undefined) }] };
}
