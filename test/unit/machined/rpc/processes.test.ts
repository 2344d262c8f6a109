import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { netstat } from "../../../../agent/src/machined/rpc/netstat.js";
import { pageSize, processes } from "../../../../agent/src/machined/rpc/processes.js";

const proc = mkdtempSync(path.join(os.tmpdir(), "basalt-proc-"));
after(() => rmSync(proc, { recursive: true, force: true }));

function pid(
  n: number,
  files: { exe?: string; comm?: string; cmdline?: string; stat?: string; fds?: Record<string, string> },
) {
  const dir = path.join(proc, String(n));
  mkdirSync(path.join(dir, "fd"), { recursive: true });
  if (files.exe) symlinkSync(files.exe, path.join(dir, "exe"));
  for (const f of ["comm", "cmdline", "stat"] as const)
    if (files[f] !== undefined) writeFileSync(path.join(dir, f), files[f]!);
  for (const [fd, target] of Object.entries(files.fds ?? {})) symlinkSync(target, path.join(dir, "fd", fd));
}

const stat = (n: number, name: string, ppid: number) =>
  `${n} (${name}) S ${ppid} 1 1 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 5000 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n`;
pid(1, { exe: "/usr/lib/basalt/init", comm: "init\n", cmdline: "/init\0", stat: stat(1, "init", 0) });
pid(42, {
  exe: "/usr/bin/node",
  comm: "node\n",
  cmdline: "node\0machined\0--flag=a b\0",
  stat: stat(42, "node (x)", 1),
  fds: { "3": "socket:[777]", "4": "/dev/null", "5": "socket:[778]" },
});
pid(2, { comm: "kthreadd\n", cmdline: "", stat: stat(2, "kthreadd", 0) });
pid(43, { exe: "/usr/bin/zombie", comm: "z\n", cmdline: "", stat: stat(43, "z", 1) });
mkdirSync(path.join(proc, "self"));
mkdirSync(path.join(proc, "net"));
writeFileSync(
  path.join(proc, "net", "tcp"),
  "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
    "   0: 0100007F:C350 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0000000000000000 100 0 0 10 0\n" +
    "   1: 0100007F:C350 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 778 1 0000000000000000 100 0 0 10 0\n" +
    "   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 999 1 0000000000000000 100 0 0 10 0\n",
);

test("Processes: pids with an executable and a command line, in pid order; times in seconds, RSS in bytes, args joined by spaces", async () => {
  const page = pageSize();
  const got = (await processes(proc)).messages[0]!.processes;
  assert.deepEqual(
    got.map((p) => p.pid),
    [1, 42],
  );
  assert.deepEqual(got[1], {
    pid: 42,
    ppid: 1,
    state: "S",
    threads: 3,
    cpu_time: 3,
    virtual_memory: 104857600,
    resident_memory: 2560 * page,
    command: "node",
    executable: "/usr/bin/node",
    args: "node machined --flag=a b",
  });
});

test("Netstat from a fixture: the filter, the owner found through its fd links, none for an unowned socket", async () => {
  const req = (filter: number) => ({
    filter,
    feature: { pid: true },
    l4proto: { tcp: true, tcp6: true },
    netns: { hostnetwork: true },
  });
  const listening = (await netstat(req(2), proc)).messages[0]!.connectrecord;
  assert.deepEqual(
    listening.map((r) => [r.localip, r.localport, r.state, r.inode, r.process]),
    [
      ["127.0.0.1", 50000, 10, 777, { pid: 42, name: "node" }],
      ["0.0.0.0", 22, 10, 999, { pid: 0, name: "" }],
    ],
  );
  const connected = (await netstat(req(1), proc)).messages[0]!.connectrecord;
  assert.deepEqual(
    connected.map((r) => [r.remoteip, r.remoteport, r.state, r.process.pid]),
    [["127.0.0.1", 40000, 1, 42]],
  );
  assert.equal((await netstat(req(0), proc)).messages[0]!.connectrecord.length, 3);
  assert.equal(
    (await netstat({ ...req(0), netns: { hostnetwork: false } }, proc)).messages[0]!.connectrecord.length,
    0,
  );
});
