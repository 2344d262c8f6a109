// MachineService.Netstat (talosctl netstat): the host network namespace's sockets from
// /proc/net/<proto>, filtered as Talos filters them (listening: remote address
// unspecified and port 0; connected: both set), with the owning process found through
// /proc/<pid>/fd when asked. Other namespaces (pods') are not read: no records for them.

import { promises as fs } from "node:fs";
import path from "node:path";
import { parseSocketTable, type SocketEntry } from "../../sys/procfs.js";
import { pathError } from "./errno.js";

/** machine.NetstatRequest.Filter */
export const NetstatFilter = { ALL: 0, CONNECTED: 1, LISTENING: 2 } as const;

const protos = ["tcp", "tcp6", "udp", "udp6", "udplite", "udplite6", "raw", "raw6"] as const;
type Proto = (typeof protos)[number];

export interface NetstatRequest {
  filter?: number;
  feature?: { pid?: boolean };
  l4proto?: Partial<Record<Proto, boolean>>;
  netns?: { hostnetwork?: boolean; netns?: string[]; allnetns?: boolean };
}

export interface ConnectRecord {
  l4proto: string;
  localip: string;
  localport: number;
  remoteip: string;
  remoteport: number;
  state: number;
  txqueue: number;
  rxqueue: number;
  tr: number;
  timerwhen: number;
  retrnsmt: number;
  uid: number;
  timeout: number;
  inode: number;
  ref: number;
  pointer: string;
  process: { pid: number; name: string };
  netns: string;
}

const unspecified = (ip: string) => ip === "0.0.0.0" || ip === "::";

export function accepts(filter: number, e: SocketEntry): boolean {
  if (filter === NetstatFilter.LISTENING) return unspecified(e.remoteIp) && e.remotePort === 0;
  if (filter === NetstatFilter.CONNECTED) return !unspecified(e.remoteIp) && e.remotePort !== 0;
  return true;
}

/** Socket inode → owning process, from every /proc/<pid>/fd link "socket:[<inode>]" (the first pid found wins). */
export async function socketOwners(procRoot: string): Promise<Map<number, { pid: number; name: string }>> {
  const owners = new Map<number, { pid: number; name: string }>();
  const pids = (await fs.readdir(procRoot))
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .sort((a, b) => a - b);
  for (const pid of pids) {
    const fdDir = path.join(procRoot, String(pid), "fd");
    const fds = await fs.readdir(fdDir).catch(() => [] as string[]);
    let name: string | undefined;
    for (const fd of fds) {
      const link = await fs.readlink(path.join(fdDir, fd)).catch(() => "");
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (!m || owners.has(Number(m[1]))) continue;
      name ??= (await fs.readFile(path.join(procRoot, String(pid), "comm"), "utf8").catch(() => "")).trim();
      owners.set(Number(m[1]), { pid, name });
    }
  }
  return owners;
}

export async function netstat(req: NetstatRequest, procRoot = "/proc") {
  const records: ConnectRecord[] = [];
  // talosctl always asks for the host network; a request without it names only other namespaces.
  if (req.netns?.hostnetwork !== false) {
    const filter = req.filter ?? NetstatFilter.ALL;
    const owners = req.feature?.pid ? await socketOwners(procRoot) : new Map<number, { pid: number; name: string }>();
    for (const proto of protos) {
      if (!req.l4proto?.[proto]) continue;
      const file = path.join(procRoot, "net", proto);
      let text: string;
      try {
        text = await fs.readFile(file, "utf8");
      } catch (err) {
        // A kernel without the protocol (or IPv6) has no table: nothing to list.
        if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
        throw pathError("open", file, err);
      }
      for (const e of parseSocketTable(text)) {
        if (!accepts(filter, e)) continue;
        records.push({
          l4proto: proto,
          localip: e.localIp,
          localport: e.localPort,
          remoteip: e.remoteIp,
          remoteport: e.remotePort,
          state: e.state,
          txqueue: e.txQueue,
          rxqueue: e.rxQueue,
          tr: e.timerActive,
          timerwhen: e.timerWhen,
          retrnsmt: e.retransmits,
          uid: e.uid,
          timeout: e.timeout,
          inode: e.inode,
          ref: e.ref,
          pointer: e.pointer,
          process: owners.get(e.inode) ?? { pid: 0, name: "" },
          netns: "",
        });
      }
    }
  }
  return { messages: [{ connectrecord: records }] };
}
