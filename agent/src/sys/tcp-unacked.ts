// How many bytes a TCP connection of this network namespace has sent or queued that the
// peer has not acknowledged yet: the tx_queue the kernel reports in /proc/net/tcp{,6}
// (write_seq - snd_una for an established socket). Zero: the peer holds all of it.

import { readFile } from "node:fs/promises";
import path from "node:path";
import { parseSocketTable } from "./procfs.js";

export interface TcpConnection {
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
}

// Node names an IPv4 peer of a dual-stack socket ::ffff:a.b.c.d; the kernel's table, parsed, a.b.c.d.
const plain = (address: string) => address.replace(/^::ffff:/i, "");

/** The connection's unacknowledged bytes; undefined when the kernel lists no such connection (it is gone). */
export async function tcpUnackedBytes(conn: TcpConnection, procNet = "/proc/net"): Promise<number | undefined> {
  const [local, remote] = [plain(conn.localAddress), plain(conn.remoteAddress)];
  for (const file of ["tcp", "tcp6"]) {
    const text = await readFile(path.join(procNet, file), "utf8").catch(() => "");
    const entry = parseSocketTable(text).find(
      (e) =>
        e.localPort === conn.localPort &&
        e.remotePort === conn.remotePort &&
        e.localIp === local &&
        e.remoteIp === remote,
    );
    if (entry) return entry.txQueue;
  }
  return undefined;
}
