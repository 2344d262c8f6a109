import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { openBlockTarget, type BlockTarget } from "../../../agent/src/sys/blockdev.js";
import {
  decodeMetaBlock,
  encodeLegacyAdv,
  encodeMetaBlock,
  metaBlockSize,
  MetaStore,
  MetaTag,
  readMeta,
  writeMeta,
} from "../../../agent/src/storage/meta.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-meta-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

async function partition(name: string) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, "");
  fs.truncateSync(file, 1024 * 1024);
  return openBlockTarget(file);
}

describe("META", () => {
  it("round-trips values through the on-disk block (magics, big-endian records, SHA-256)", () => {
    const values = new Map([
      [MetaTag.metalNetworkPlatformConfig, Buffer.from("addresses: []")],
      [MetaTag.userReserved1, Buffer.from("x")],
    ]);
    const block = encodeMetaBlock(values);
    assert.equal(block.length, metaBlockSize);
    assert.equal(block.readUInt32BE(0), 0x5a4b3c2d);
    assert.equal(block.readUInt32BE(metaBlockSize - 4), 0xa5b4c3d2);
    assert.equal(block.readUInt32BE(4), 0x0a);
    assert.equal(block.readUInt32BE(8), "addresses: []".length);
    assert.deepEqual(decodeMetaBlock(block), values);
    const bad = Buffer.from(block);
    bad[100] ^= 0xff;
    assert.equal(decodeMetaBlock(bad), undefined, "checksum catches a flipped byte");
  });

  it("legacy ADV checksum makes the words sum to the second magic", () => {
    const adv = encodeLegacyAdv(new Map([[0x0c, Buffer.from("hello")]]));
    assert.equal(adv.readUInt32LE(0), 0x5a2d2fa5);
    assert.equal(adv.readUInt32LE(508), 0xdd28bf64);
    let sum = 0;
    for (let i = 4; i < 508; i += 4) sum = (sum + adv.readUInt32LE(i)) >>> 0;
    assert.equal(sum, 0xa3041767);
  });

  it("stores through both copies and reads copy 2 when copy 1 is corrupt", async () => {
    const dev = await partition("p1");
    const store = await MetaStore.open(dev);
    await store.set(MetaTag.userReserved2, "value");
    await dev.write(10, Buffer.from("garbage"));
    const load = await readMeta(dev);
    assert.equal(load.values.get(MetaTag.userReserved2)?.toString(), "value");
    assert.deepEqual(load.problems, ["META copy 1 is corrupt or blank"]);
    const reopened = await MetaStore.open(dev);
    assert.equal(reopened.get(MetaTag.userReserved2), "value");
    assert.deepEqual(reopened.problems, ["META copy 1 is corrupt or blank"]);
    assert.deepEqual((await readMeta(dev)).problems, [], "a corrupt copy is rebuilt on open");
    assert.equal(await reopened.delete(MetaTag.userReserved2), true);
    assert.equal(await reopened.delete(MetaTag.userReserved2), false);
    await dev.close();
  });

  it("a blank or fully corrupt META opens empty instead of failing", async () => {
    const dev = await partition("p2");
    await dev.write(0, Buffer.alloc(2 * metaBlockSize, 0xab));
    const store = await MetaStore.open(dev);
    assert.equal(store.keys().size, 0);
    assert.deepEqual(
      store.problems,
      ["META copy 1 is corrupt or blank", "META copy 2 is corrupt or blank"],
      "reported, not thrown",
    );
    assert.deepEqual((await readMeta(dev)).problems, [], "rebuilt as an empty, valid store");
    const legacy = await dev.read(dev.sizeBytes - 1024, 1024);
    assert.equal(legacy.readUInt32LE(0), 0x5a2d2fa5, "legacy ADV written at the partition's last KiB");
    assert.equal(legacy.readUInt32LE(512), 0x5a2d2fa5, "in two copies");
    await dev.close();
  });

  it("writes copy 1 and syncs it before touching copy 2", async () => {
    const ops: string[] = [];
    const data = Buffer.alloc(1024 * 1024);
    const fake: BlockTarget = {
      path: "fake",
      sizeBytes: data.length,
      sectorSize: 512,
      read: async (o, l) => Buffer.from(data.subarray(o, o + l)),
      write: async (o, d) => {
        ops.push(`write ${o}`);
        Buffer.from(d).copy(data, o);
      },
      sync: async () => void ops.push("sync"),
      close: async () => undefined,
    };
    await writeMeta(fake, new Map([[MetaTag.userReserved1, Buffer.from("v")]]));
    assert.deepEqual(ops, ["write 0", "sync", `write ${metaBlockSize}`, `write ${data.length - 1024}`, "sync"]);
  });

  it("refuses values that do not fit, keeping what was stored", async () => {
    const dev = await partition("p3");
    const store = await MetaStore.open(dev);
    await store.set(MetaTag.userReserved1, "kept");
    await assert.rejects(store.set(MetaTag.userReserved3, "x".repeat(metaBlockSize)), /META is full/);
    assert.equal((await readMeta(dev)).values.get(MetaTag.userReserved1)?.toString(), "kept");
    await assert.rejects(store.set(256, "x"), /does not fit uint8/);
    await dev.close();
  });
});
