import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { gunzipSync } from "node:zlib";
import { streamCopy, type CopyRequest } from "../../../../agent/src/machined/rpc/copy.js";
import { FakeCall } from "./fake-call.js";

/** Names of the entries in an uncompressed tar (512-byte headers, data padded to 512). */
function tarNames(tar: Buffer): string[] {
  const names: string[] = [];
  for (let off = 0; off + 512 <= tar.length; ) {
    const name = tar.toString("latin1", off, off + 100).replace(/\0.*$/s, "");
    if (name === "") break;
    names.push(name);
    const size = parseInt(
      tar
        .toString("latin1", off + 124, off + 136)
        .replace(/\0.*$/s, "")
        .trim() || "0",
      8,
    );
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return names;
}

test("sysfs attributes whose read fails after their header (size 4096) are skipped and reported; the archive ends cleanly", async () => {
  // The loopback's duplex and speed answer EINVAL on read.
  const root = "/sys/devices/virtual/net/lo";
  const unreadable = readdirSync(root).filter((n) => {
    try {
      readFileSync(path.join(root, n));
      return false;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === "EINVAL";
    }
  });
  assert.ok(unreadable.includes("duplex"), "the loopback's duplex answers EINVAL");
  const call = new FakeCall<CopyRequest>({ root_path: root });
  await streamCopy(call.asStream());
  assert.ok(call.ended);
  const messages = call.written as { bytes?: Buffer; metadata?: { error: string } }[];
  const names = tarNames(gunzipSync(Buffer.concat(messages.flatMap((m) => (m.bytes ? [m.bytes] : [])))));
  for (const n of unreadable) {
    assert.equal(names.includes(n), false, `${n} is not in the archive`);
    assert.match(messages.at(-1)!.metadata!.error, new RegExp(`skipping "${path.join(root, n)}"`));
  }
  assert.ok(names.includes("address"), "readable attributes are archived");
});
