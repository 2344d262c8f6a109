// FdSocketWriter on a real Unix stream socket (the kernel-calls addon's sendmsg): writes with fds and
// without keep their order through a full socket buffer, each runs its callback once its bytes are in
// the kernel, and a reader on Node's own net.Socket never receives the fds (the kernel closes them).
import assert from "node:assert/strict";
import { once } from "node:events";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { openPipe } from "../../agent/src/sys/pipe.js";
import { FdSocketWriter } from "../../agent/src/sys/fd-socket.js";

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-fd-socket-"));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A connected pair: the server's end to write on, the client's (a plain net.Socket) to read from. */
async function socketPair(name: string): Promise<{ server: net.Server; writeEnd: net.Socket; readEnd: net.Socket }> {
  const server = net.createServer();
  server.listen(path.join(dir, name));
  await once(server, "listening");
  const readEnd = net.connect(path.join(dir, name));
  const [writeEnd] = (await once(server, "connection")) as [net.Socket];
  return { server, writeEnd, readEnd };
}

const openFds = () => fs.readdirSync("/proc/self/fd").length;

// 64 writes of 64 KiB, four times the default socket buffers: the even ones carry an fd.
const WRITES = 64;
const WRITE_BYTES = 64 * 1024;
const payload = (i: number) => Buffer.alloc(WRITE_BYTES, i);

test("writes with and without fds arrive whole and in order through a full socket buffer; the reader gets no fds", async () => {
  const { server, writeEnd, readEnd } = await socketPair("order");
  const pipe = openPipe();
  const lockEnd = new net.Socket({ fd: pipe.read, readable: true, writable: false });
  lockEnd.resume();
  try {
    const writer = new FdSocketWriter(writeEnd);
    const done: number[] = [];
    const all = Array.from(
      { length: WRITES },
      (_, i) =>
        new Promise<void>((resolve, reject) => {
          writer.write(payload(i), i % 2 === 0 ? [pipe.write] : [], (err) => {
            if (err) return reject(err);
            done.push(i);
            resolve();
          });
        }),
    );
    // The client reads nothing yet: the kernel holds back most of the 4 MiB.
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(done.length < WRITES / 2, `${done.length} of ${WRITES} writes reached the kernel before the reader read`);
    const fdsBeforeReading = openFds();

    const received: Buffer[] = [];
    let bytes = 0;
    const readAll = new Promise<void>((resolve) =>
      readEnd.on("data", (chunk: Buffer) => {
        received.push(chunk);
        bytes += chunk.length;
        if (bytes === WRITES * WRITE_BYTES) resolve();
      }),
    );
    await Promise.all(all);
    assert.deepEqual(
      done,
      Array.from({ length: WRITES }, (_, i) => i),
      "callbacks in write order",
    );
    await readAll;
    assert.ok(
      Buffer.concat(received).equals(Buffer.concat(Array.from({ length: WRITES }, (_, i) => payload(i)))),
      "the bytes arrive as written",
    );

    // 32 copies of the pipe's write end were read with read(2): none entered this process, and once this
    // process closes its own, no copy is left anywhere (the read end sees EOF).
    assert.equal(openFds(), fdsBeforeReading);
    fs.closeSync(pipe.write);
    await once(lockEnd, "close");
  } finally {
    lockEnd.destroy();
    readEnd.destroy();
    writeEnd.destroy();
    server.close();
  }
});

test("a reader that goes away fails the writes still queued, each callback once", async () => {
  const { server, writeEnd, readEnd } = await socketPair("gone");
  const pipe = openPipe();
  try {
    const writer = new FdSocketWriter(writeEnd);
    // The writer destroys the socket with the error that stopped it: its owner hears of it here.
    const socketError = new Promise<Error>((resolve) => writeEnd.once("error", resolve));
    const outcomes = await new Promise<(string | undefined)[]>((resolve) => {
      const out: (string | undefined)[] = [];
      for (let i = 0; i < WRITES; i++) {
        writer.write(payload(i), i % 2 === 0 ? [pipe.write] : [], (err) => {
          out.push(err?.name);
          if (out.length === WRITES) resolve(out);
        });
      }
      readEnd.destroy();
    });
    const failed = outcomes.filter((name) => name !== undefined).length;
    assert.ok(failed > 0 && failed < WRITES, `${failed} of ${WRITES} writes failed`);
    console.log(`socket error: ${(await socketError).message}`);
    // A write after the failure is refused at once.
    const late = await new Promise<Error | undefined>((resolve) =>
      writer.write(Buffer.from("late"), [pipe.write], resolve),
    );
    assert.ok(late instanceof Error);
  } finally {
    fs.closeSync(pipe.read);
    fs.closeSync(pipe.write);
    writeEnd.destroy();
    server.close();
  }
});
