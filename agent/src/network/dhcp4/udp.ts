// DHCP over a plain UDP socket (Node has no raw or packet sockets). One socket on
// 0.0.0.0:68 is shared by every link's client, because unicast replies reach only one
// of several sockets bound to the same port; each client filters by xid and MAC.
//
// A broadcast must leave by its own link, which may have no address yet: a UDP socket
// cannot bind to a device, so broadcasts go out through a packet socket on the link
// (NetKernel.broadcastUdp4), as Talos's client sends them, with no route to add.
// Replies still arrive on the UDP socket.

import dgram from "node:dgram";
import { describeError, SystemError } from "../../errors.js";
import { logger } from "../../log.js";
import type { NetKernel } from "../../sys/net.js";
import type { DhcpTransport } from "./client.js";
import { CLIENT_PORT, SERVER_PORT } from "./packet.js";

const log = logger("dhcp4-udp");

export interface DhcpPortOptions {
  kernel: NetKernel;
  /** Defaults to 68/67; tests may move them. */
  clientPort?: number;
  serverPort?: number;
  bindAddress?: string;
}

export class DhcpPort {
  private socket: dgram.Socket | undefined;
  private opening: Promise<dgram.Socket> | undefined;
  private readonly handlers = new Set<(packet: Buffer) => void>();

  constructor(private readonly opts: DhcpPortOptions) {}

  /** A transport for one link's client; the socket opens with the first and closes with the last. */
  async transport(linkName: string): Promise<DhcpTransport> {
    await this.open();
    let handler: ((packet: Buffer) => void) | undefined;
    let closed = false;
    return {
      send: (packet, dest) => (dest.broadcast ? this.broadcast(linkName, packet) : this.unicast(packet, dest.address)),
      onReceive: (h) => {
        if (handler) this.handlers.delete(handler);
        handler = h;
        this.handlers.add(h);
      },
      close: () => {
        if (closed) return;
        closed = true;
        if (handler) this.handlers.delete(handler);
        if (this.handlers.size === 0) this.closeSocket();
      },
    };
  }

  private open(): Promise<dgram.Socket> {
    if (this.socket) return Promise.resolve(this.socket);
    this.opening ??= new Promise<dgram.Socket>((resolve, reject) => {
      const s = dgram.createSocket({ type: "udp4", reuseAddr: true });
      s.once("error", (err) => {
        this.opening = undefined;
        // The socket that failed to bind is ours to close: each retry makes a new one.
        s.close();
        reject(
          new SystemError(`cannot bind DHCP client port ${this.opts.clientPort ?? CLIENT_PORT}`, {}, { cause: err }),
        );
      });
      s.bind(
        { port: this.opts.clientPort ?? CLIENT_PORT, address: this.opts.bindAddress ?? "0.0.0.0", exclusive: false },
        () => {
          s.setBroadcast(true);
          s.removeAllListeners("error");
          s.on("error", (err) => log.warn("DHCP socket error", { error: describeError(err) }));
          s.on("message", (msg) => {
            for (const h of [...this.handlers]) h(msg);
          });
          this.socket = s;
          this.opening = undefined;
          resolve(s);
        },
      );
    });
    return this.opening;
  }

  private closeSocket(): void {
    const s = this.socket;
    this.socket = undefined;
    s?.close();
  }

  /**
   * The open socket for a send. Only transport() opens it: a send that arrives after the
   * last transport closed (e.g. a queued broadcast) must not reopen a socket nobody closes.
   */
  private current(): dgram.Socket {
    if (!this.socket)
      throw new SystemError("DHCP client socket is closed", { port: this.opts.clientPort ?? CLIENT_PORT });
    return this.socket;
  }

  private async unicast(packet: Buffer, address: string): Promise<void> {
    await sendOn(this.current(), packet, this.opts.serverPort ?? SERVER_PORT, address);
  }

  private async broadcast(linkName: string, packet: Buffer): Promise<void> {
    // Only while a transport is open, as unicasts.
    this.current();
    await this.opts.kernel.broadcastUdp4(
      linkName,
      this.opts.clientPort ?? CLIENT_PORT,
      this.opts.serverPort ?? SERVER_PORT,
      packet,
    );
  }
}

function sendOn(s: dgram.Socket, packet: Buffer, port: number, address: string): Promise<void> {
  return new Promise((resolve, reject) => {
    s.send(packet, port, address, (err) =>
      err ? reject(new SystemError(`DHCP send to ${address}:${port} failed`, {}, { cause: err })) : resolve(),
    );
  });
}
