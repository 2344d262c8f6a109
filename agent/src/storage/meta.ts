// META: the raw key-value partition (reference §8.2). Two stores live in it:
// the one in use (a 256 KiB block written twice from offset 0, SHA-256 checked)
// and the legacy syslinux ADV in the partition's last KiB, kept for compatibility.

import { createHash } from "node:crypto";
import { InvalidInputError } from "../errors.js";
import { logger } from "../log.js";
import type { BlockTarget } from "../sys/blockdev.js";

export const metaBlockSize = 256 * 1024;
const headMagic = 0x5a4b3c2d;
const tailMagic = 0xa5b4c3d2;
const checksumSize = 32;

/** META tags Talos defines (reference §8.2). */
export const MetaTag = {
  upgrade: 0x06,
  stagedUpgradeImageRef: 0x07,
  stagedUpgradeInstallOptions: 0x08,
  stateEncryptionConfig: 0x09,
  metalNetworkPlatformConfig: 0x0a,
  downloadUrlCode: 0x0b,
  userReserved1: 0x0c,
  userReserved2: 0x0d,
  userReserved3: 0x0e,
  uuidOverride: 0x0f,
  uniqueMachineToken: 0x10,
} as const;

export type MetaValues = Map<number, Buffer>;

/** Encodes one 256 KiB block; throws when the values do not fit. */
export function encodeMetaBlock(values: MetaValues): Buffer {
  const block = Buffer.alloc(metaBlockSize);
  block.writeUInt32BE(headMagic, 0);
  // Talos's capacity rule: 20 + Σ(8 + length) ≤ 256 KiB − 40.
  const used = [...values.values()].reduce((n, v) => n + 8 + v.length, 20);
  if (used > metaBlockSize - 40)
    throw new InvalidInputError("META is full: the values do not fit in 256 KiB", { bytes: used });
  let at = 4;
  for (const [tag, value] of [...values].sort(([a], [b]) => a - b)) {
    block.writeUInt32BE(tag, at);
    block.writeUInt32BE(value.length, at + 4);
    value.copy(block, at + 8);
    at += 8 + value.length;
  }
  block.writeUInt32BE(tailMagic, metaBlockSize - 4);
  createHash("sha256")
    .update(block)
    .digest()
    .copy(block, metaBlockSize - 4 - checksumSize);
  return block;
}

/** Decodes one block; undefined when its magics or checksum are wrong. */
export function decodeMetaBlock(block: Buffer): MetaValues | undefined {
  if (
    block.length !== metaBlockSize ||
    block.readUInt32BE(0) !== headMagic ||
    block.readUInt32BE(metaBlockSize - 4) !== tailMagic
  )
    return undefined;
  const sumAt = metaBlockSize - 4 - checksumSize;
  const stored = Buffer.from(block.subarray(sumAt, sumAt + checksumSize));
  const copy = Buffer.from(block);
  copy.fill(0, sumAt, sumAt + checksumSize);
  if (!createHash("sha256").update(copy).digest().equals(stored)) return undefined;
  const values: MetaValues = new Map();
  for (let at = 4; at + 8 <= sumAt; ) {
    const tag = block.readUInt32BE(at);
    const length = block.readUInt32BE(at + 4);
    if (tag === 0 || at + 8 + length > sumAt) break;
    values.set(tag, Buffer.from(block.subarray(at + 8, at + 8 + length)));
    at += 8 + length;
  }
  return values;
}

// The legacy syslinux ADV: 512-byte copies, magic, checksum, 500 data bytes of
// (tag, length, value) byte records, trailing magic; the checksum makes the data
// words sum to the second magic.
const advSize = 512;
const advMagic1 = 0x5a2d2fa5;
const advMagic2 = 0xa3041767;
const advMagic3 = 0xdd28bf64;

export function encodeLegacyAdv(values: MetaValues): Buffer {
  const adv = Buffer.alloc(advSize);
  adv.writeUInt32LE(advMagic1, 0);
  adv.writeUInt32LE(advMagic3, advSize - 4);
  let at = 8;
  for (const [tag, value] of [...values].sort(([a], [b]) => a - b)) {
    // Only what fits the old format is mirrored; the main store keeps everything.
    if (tag > 0xff || value.length > 0xff || at + 2 + value.length > advSize - 4) continue;
    adv.writeUInt8(tag, at);
    adv.writeUInt8(value.length, at + 1);
    value.copy(adv, at + 2);
    at += 2 + value.length;
  }
  let sum = 0;
  for (let i = 8; i < advSize - 4; i += 4) sum = (sum + adv.readUInt32LE(i)) >>> 0;
  adv.writeUInt32LE((advMagic2 - sum) >>> 0, 4);
  return adv;
}

export interface MetaLoad {
  values: MetaValues;
  /** Why the stored data was not used as is (a corrupt copy, or nothing valid). */
  problems: string[];
}

/** Reads both copies: the first valid one wins, a bad copy is reported. */
export async function readMeta(dev: BlockTarget): Promise<MetaLoad> {
  const problems: string[] = [];
  const copies = [await dev.read(0, metaBlockSize), await dev.read(metaBlockSize, metaBlockSize)].map(decodeMetaBlock);
  if (!copies[0]) problems.push("META copy 1 is corrupt or blank");
  if (!copies[1]) problems.push("META copy 2 is corrupt or blank");
  return { values: copies[0] ?? copies[1] ?? new Map(), problems };
}

/**
 * Writes copy 1, syncs, then copy 2 and the legacy ADV, and syncs again: a power
 * loss at any moment leaves at least one complete copy.
 */
export async function writeMeta(dev: BlockTarget, values: MetaValues): Promise<void> {
  const block = encodeMetaBlock(values);
  await dev.write(0, block);
  await dev.sync();
  await dev.write(metaBlockSize, block);
  const adv = encodeLegacyAdv(values);
  await dev.write(dev.sizeBytes - 2 * advSize, Buffer.concat([adv, adv]));
  await dev.sync();
}

const log = logger("meta");

/** The META partition as a key-value store of string values, written through on every change. */
export class MetaStore {
  private constructor(
    private readonly dev: BlockTarget,
    private values: MetaValues,
    /** What was wrong with the stored copies when opened (empty when both were sound), for the console. */
    readonly problems: readonly string[],
  ) {}

  /** Opens META; a corrupt or blank store is reported and rebuilt, never fatal. */
  static async open(dev: BlockTarget): Promise<MetaStore> {
    const { values, problems } = await readMeta(dev);
    const store = new MetaStore(dev, values, problems);
    if (problems.length > 0) {
      log.warn("META rebuilt", { problems, keys: values.size });
      await writeMeta(dev, values);
    }
    return store;
  }

  keys(): Map<number, string> {
    return new Map([...this.values].map(([k, v]) => [k, v.toString("utf8")]));
  }

  get(tag: number): string | undefined {
    return this.values.get(tag)?.toString("utf8");
  }

  async set(tag: number, value: string): Promise<void> {
    checkTag(tag);
    const next = new Map(this.values).set(tag, Buffer.from(value, "utf8"));
    await writeMeta(this.dev, next);
    this.values = next;
  }

  /** Returns false when the tag was not set. */
  async delete(tag: number): Promise<boolean> {
    checkTag(tag);
    if (!this.values.has(tag)) return false;
    const next = new Map(this.values);
    next.delete(tag);
    await writeMeta(this.dev, next);
    this.values = next;
    return true;
  }

  close(): Promise<void> {
    return this.dev.close();
  }
}

function checkTag(tag: number): void {
  if (!Number.isInteger(tag) || tag < 0 || tag > 0xff)
    throw new InvalidInputError(`META key ${tag} does not fit uint8`, { tag });
}
