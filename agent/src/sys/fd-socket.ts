// Sending fds (SCM_RIGHTS) on a Unix stream socket that Node's net.Socket owns. Node cannot: a write that
// carries fds goes through the kernel-calls addon's sendmsg on the socket's fd, once every earlier write has
// left Node's queue for the kernel, so the peer reads the bytes in the order they were written.
//
// Reading stays Node's: libuv reads a socket it does not use for IPC with read(2), which has no control
// buffer, and the kernel then closes whatever fds the peer sent (they never enter this process).

import type net from "node:net";
import os from "node:os";
import { getSystemErrorName } from "node:util";
import { SystemError } from "../errors.js";
import { locateKernelCalls, type KernelCalls } from "./kernel-calls.js";

let addon: KernelCalls | undefined;

const { EAGAIN, EINTR } = os.constants.errno;
// A full socket buffer has no event in Node to wait on (libuv watches the fd for its own writes only):
// the send is tried again after a pause that doubles up to the ceiling.
const RETRY_FIRST_MS = 1;
const RETRY_CEILING_MS = 100;

interface QueuedWrite {
  data: Buffer;
  fds: readonly number[];
  done: (err?: Error) => void;
}

/** Writes bytes, some with fds beside them, on one connected Unix stream socket, in order. */
export class FdSocketWriter {
  private readonly queue: QueuedWrite[] = [];
  /** Writes handed to Node whose bytes have not all reached the kernel yet. */
  private inNode = 0;
  private retry: NodeJS.Timeout | undefined;
  private retryMs = RETRY_FIRST_MS;
  private failure: Error | undefined;

  constructor(private readonly socket: net.Socket) {
    socket.once("close", () => this.fail(new SystemError("the socket closed before the write")));
  }

  /**
   * Queues `data` with `fds`, which must stay open until `done`: it runs once the bytes are in the
   * kernel (the fds with them, the peer's from then on), or with the error that stopped them.
   */
  write(data: Buffer, fds: readonly number[], done: (err?: Error) => void = () => undefined): void {
    if (this.failure) return done(this.failure);
    this.queue.push({ data, fds, done });
    this.pump();
  }

  private pump(): void {
    while (this.queue.length > 0 && !this.failure && !this.retry) {
      const head = this.queue[0]!;
      if (head.fds.length === 0) {
        this.queue.shift();
        this.inNode++;
        this.socket.write(head.data, (err) => {
          this.inNode--;
          head.done(err ?? undefined);
          if (this.inNode === 0) this.pump();
        });
        continue;
      }
      // The last of Node's writes pumps again once its bytes are in the kernel.
      if (this.inNode > 0) return;
      try {
        this.sendHead(head);
      } catch (err) {
        // No fd or no addon: nothing can go out on this socket any more.
        const failure = new SystemError("sending fds failed", {}, { cause: err });
        this.fail(failure);
        this.socket.destroy(failure);
      }
    }
  }

  /** One sendmsg of the queue's head, which carries fds; leaves the queue as the outcome says. */
  private sendHead(head: QueuedWrite): void {
    const fd = socketFd(this.socket);
    addon ??= locateKernelCalls()();
    const sent = addon.sendFds(fd, head.data, Buffer.from(Int32Array.from(head.fds).buffer));
    if (sent === head.data.length) {
      this.queue.shift();
      this.retryMs = RETRY_FIRST_MS;
      head.done();
    } else if (sent >= 0) {
      // The fds went with the bytes the kernel took: the rest is plain bytes, Node's to write.
      head.data = head.data.subarray(sent);
      head.fds = [];
    } else if (-sent === EAGAIN) {
      this.retry = setTimeout(() => {
        this.retry = undefined;
        this.pump();
      }, this.retryMs).unref();
      this.retryMs = Math.min(this.retryMs * 2, RETRY_CEILING_MS);
    } else if (-sent !== EINTR) {
      const err = new SystemError(`sendmsg with fds failed: ${getSystemErrorName(sent)}`, { errno: -sent, fd });
      this.fail(err);
      this.socket.destroy(err);
    }
  }

  private fail(err: Error): void {
    this.failure ??= err;
    clearTimeout(this.retry);
    this.retry = undefined;
    for (const w of this.queue.splice(0)) w.done(this.failure);
  }
}

/** The socket's fd: net.Socket keeps it on its libuv handle, which Node's public API does not show. */
function socketFd(socket: net.Socket): number {
  // `_handle` is Node's internal stream handle (a Pipe for a Unix socket); its fd getter is -1 once closed.
  const fd = (socket as unknown as { _handle?: { fd?: number } | null })._handle?.fd;
  if (fd === undefined || fd < 0) throw new SystemError("the socket has no fd (closed, or not a Unix socket)");
  return fd;
}
