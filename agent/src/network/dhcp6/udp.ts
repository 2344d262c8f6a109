// DHCPv6 over one UDP socket on [::]:546 shared by every link's client (each filters
// by transaction id and client DUID). A client sends from its link-local address to
// ff02::1:2 scoped to its link; servers answer it unicast on port 546.

import dgram from "node:dgram";
import { describeError, SystemError } from "../../errors.js";
import { logger } from "../../log.js";
import type { Dhcp6Transport } from "./client.js";
import { ALL_SERVERS, CLIENT_PORT, SERVER_PORT } from "./packet.js";

const log = logger("dhcp6-udp");

export interface Dhcp6PortOptions {
  /** Defaults to 546/547; tests may move them. */
  clientPort?: number;
  serverPort?: number;
}

export class Dhcp6Port {
  private socket: dgram.Socket | undefined;
  private opening: Promise<dgram.Socket> | undefined;
  private readonly handlers = new Set<(packet: Buffer) => void>();

  constructor(private readonly opts: Dhcp6PortOptions = {}) {}

  /** A transport for one link's client; the socket opens with the first and closes with the last. */
  async transport(linkName: string): Promise<Dhcp6Transport> {
    await this.open();
    let handler: ((packet: Buffer) => void) | undefined;
    let closed = false;
    return {
      send: (packet) => this.send(linkName, packet),
      onReceive: (h) => {
        if (handler) this.handlers.delete(handler);
        handler = h;
        this.handlers.add(h);
      },
      close: () => {
        if (closed) return;
        closed = true;
        if (handler) this.handlers.delete(handler);
        if (this.handlers.size === 0) {
          const s = this.socket;
          this.socket = undefined;
          s?.close();
        }
      },
    };
  }

  private open(): Promise<dgram.Socket> {
    if (this.socket) return Promise.resolve(this.socket);
    const port = this.opts.clientPort ?? CLIENT_PORT;
    this.opening ??= new Promise<dgram.Socket>((resolve, reject) => {
      const s = dgram.createSocket({ type: "udp6", reuseAddr: true });
      s.once("error", (err) => {
        this.opening = undefined;
        // The socket that failed to bind is ours to close: each retry makes a new one.
        s.close();
        reject(new SystemError(`cannot bind DHCPv6 client port ${port}`, { port }, { cause: err }));
      });
      s.bind({ port, address: "::", exclusive: false }, () => {
        s.removeAllListeners("error");
        s.on("error", (err) => log.warn("DHCPv6 socket error", { error: describeError(err) }));
        s.on("message", (msg) => {
          for (const h of [...this.handlers]) h(msg);
        });
        this.socket = s;
        this.opening = undefined;
        resolve(s);
      });
    });
    return this.opening;
  }

  private send(linkName: string, packet: Buffer): Promise<void> {
    const s = this.socket;
    const port = this.opts.serverPort ?? SERVER_PORT;
    if (!s) return Promise.reject(new SystemError("DHCPv6 client socket is closed", { link: linkName }));
    return new Promise((resolve, reject) => {
      s.send(packet, port, `${ALL_SERVERS}%${linkName}`, (err) =>
        err
          ? reject(
              new SystemError(`DHCPv6 send to ${ALL_SERVERS}%${linkName} failed`, { link: linkName }, { cause: err }),
            )
          : resolve(),
      );
    });
  }
}
