// The one-shot observation RPCs (talosctl memory, the dashboard's panels): each reads one
// /proc file when called and answers one message, fields as Talos fills them.

import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseCpuinfo, parseDiskstats, parseLoadavg, parseMeminfo, parseNetDev, parseStat } from "../../sys/procfs.js";
import { pathError } from "./errno.js";

async function readProc(procRoot: string, name: string): Promise<string> {
  const file = path.join(procRoot, name);
  return fs.readFile(file, "utf8").catch((err: unknown) => {
    throw pathError("open", file, err);
  });
}

export async function memory(procRoot = "/proc") {
  return { messages: [{ meminfo: parseMeminfo(await readProc(procRoot, "meminfo")) }] };
}

export async function cpuInfo(procRoot = "/proc") {
  return { messages: [{ cpu_info: parseCpuinfo(await readProc(procRoot, "cpuinfo")) }] };
}

export async function loadAvg(procRoot = "/proc") {
  return { messages: [parseLoadavg(await readProc(procRoot, "loadavg"))] };
}

export async function systemStat(procRoot = "/proc") {
  return { messages: [parseStat(await readProc(procRoot, "stat"))] };
}

export async function networkDeviceStats(procRoot = "/proc") {
  return { messages: [parseNetDev(await readProc(procRoot, "net/dev"))] };
}

export async function diskStats(procRoot = "/proc") {
  return { messages: [parseDiskstats(await readProc(procRoot, "diskstats"))] };
}

/** The kernel's hostname (uname), as Go's os.Hostname reads it. */
export async function hostname() {
  return { messages: [{ hostname: os.hostname() }] };
}
