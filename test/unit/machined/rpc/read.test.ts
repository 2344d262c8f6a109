import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { InvalidInputError, NotFoundError } from "../../../../agent/src/errors.js";
import { streamFile, type ReadRequest } from "../../../../agent/src/machined/rpc/read.js";
import { FakeCall } from "./fake-call.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-read-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const bytesOf = (call: FakeCall<ReadRequest>) => Buffer.concat(call.written.map((m) => (m as { bytes: Buffer }).bytes));

test("a regular file arrives whole, in 64 KiB chunks, and the stream ends", async () => {
  const file = path.join(dir, "big");
  const data = Buffer.alloc(200 * 1024, 7);
  data.write("tail", data.length - 4);
  writeFileSync(file, data);
  const call = new FakeCall<ReadRequest>({ path: file });
  await streamFile(call.asStream());
  assert.ok(bytesOf(call).equals(data));
  assert.equal(call.written.length, 4);
  assert.ok(call.ended);
  assert.equal(call.leftover(), 0);
});

test("/proc files (size 0 in stat) are read to their end; relative paths are taken from /", async () => {
  const call = new FakeCall<ReadRequest>({ path: "proc/sys/kernel/random/boot_id" });
  await streamFile(call.asStream());
  assert.match(bytesOf(call).toString(), /^[0-9a-f-]{36}\n$/);
});

test("a missing path is NotFound and a directory is refused, both before anything is sent", async () => {
  const missing = new FakeCall<ReadRequest>({ path: path.join(dir, "nope") });
  await assert.rejects(
    streamFile(missing.asStream()),
    (err: Error) =>
      err instanceof NotFoundError && err.message === `stat ${path.join(dir, "nope")}: no such file or directory`,
  );
  mkdirSync(path.join(dir, "sub"));
  const directory = new FakeCall<ReadRequest>({ path: path.join(dir, "sub") });
  await assert.rejects(
    streamFile(directory.asStream()),
    (err: Error) =>
      err instanceof InvalidInputError && /^path must be a regular file: .* is a directory$/.test(err.message),
  );
  const device = new FakeCall<ReadRequest>({ path: "/dev/null" });
  await assert.rejects(
    streamFile(device.asStream()),
    (err: Error) => err instanceof InvalidInputError && /not a regular file/.test(err.message),
  );
  assert.equal(missing.written.length + directory.written.length + device.written.length, 0);
});

test("a cancel while waiting for the client to drain stops reading and leaves no listener", async () => {
  const file = path.join(dir, "cancel");
  writeFileSync(file, Buffer.alloc(1024 * 1024));
  const call = new FakeCall<ReadRequest>({ path: file });
  call.onWrite = (n) => {
    if (n !== 2) return;
    call.full = true;
    setImmediate(() => call.cancel());
  };
  await streamFile(call.asStream());
  assert.equal(call.written.length, 2, "nothing more is read once the client is gone");
  assert.equal(call.ended, false);
  assert.equal(call.leftover(), 0);
});

test("back-pressure: the handler waits for drain, then goes on", async () => {
  const file = path.join(dir, "drain");
  writeFileSync(file, Buffer.alloc(3 * 64 * 1024, 1));
  const call = new FakeCall<ReadRequest>({ path: file });
  call.full = true;
  call.onWrite = () => setImmediate(() => call.emit("drain"));
  await streamFile(call.asStream());
  assert.equal(call.written.length, 3);
  assert.ok(call.ended);
  assert.equal(call.leftover(), 0);
});
