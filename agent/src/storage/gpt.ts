// GUID partition tables (UEFI spec §5.3): a protective MBR, a primary header and
// entry array at the start of the disk, and a backup copy at its end.

import { randomUUID } from "node:crypto";
import { crc32 } from "node:zlib";
import { InvalidInputError } from "../errors.js";
import type { BlockTarget } from "../sys/blockdev.js";

export interface GptPartition {
  /** GPT partition name (Talos finds its partitions by it). */
  name: string;
  typeGuid: string;
  uuid: string;
  firstLba: bigint;
  /** Inclusive. */
  lastLba: bigint;
  attributes: bigint;
}

export interface GptTable {
  diskGuid: string;
  sectorSize: number;
  firstUsableLba: bigint;
  lastUsableLba: bigint;
  partitions: GptPartition[];
}

/** What to lay out: sizes in bytes, 0 for "the rest of the disk" (last partition only). */
export interface PartitionRequest {
  name: string;
  typeGuid: string;
  sizeBytes: number;
  attributes?: bigint;
}

/** Attribute bit 2: legacy BIOS bootable. */
export const legacyBiosBootable = 1n << 2n;

const entryCount = 128;
const entrySize = 128;
const headerSize = 92;
const alignment = 1024 * 1024;

/** A GUID's on-disk form: the first three fields little-endian, the last two as written. */
export function guidToBytes(guid: string): Buffer {
  const hex = guid.replace(/-/g, "");
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new InvalidInputError(`invalid GUID ${guid}`, { guid });
  const b = Buffer.from(hex, "hex");
  return Buffer.concat([
    Buffer.from(b.subarray(0, 4)).reverse(),
    Buffer.from(b.subarray(4, 6)).reverse(),
    Buffer.from(b.subarray(6, 8)).reverse(),
    b.subarray(8),
  ]);
}

export function guidFromBytes(b: Uint8Array): string {
  const buf = Buffer.from(b);
  const hex = Buffer.concat([
    Buffer.from(buf.subarray(0, 4)).reverse(),
    Buffer.from(buf.subarray(4, 6)).reverse(),
    Buffer.from(buf.subarray(6, 8)).reverse(),
    buf.subarray(8, 16),
  ]).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`.toUpperCase();
}

/** Places the requested partitions one after another, each starting on a 1 MiB boundary. */
export function planTable(diskBytes: number, sectorSize: number, requests: readonly PartitionRequest[]): GptTable {
  const sectors = BigInt(Math.floor(diskBytes / sectorSize));
  const entrySectors = BigInt((entryCount * entrySize) / sectorSize);
  const firstUsableLba = 2n + entrySectors;
  const lastUsableLba = sectors - 2n - entrySectors;
  const align = BigInt(alignment / sectorSize);
  let next = align;
  const partitions: GptPartition[] = [];
  for (const [i, req] of requests.entries()) {
    const start = ((next + align - 1n) / align) * align;
    let last: bigint;
    if (req.sizeBytes === 0) {
      if (i !== requests.length - 1)
        throw new InvalidInputError(`partition ${req.name}: only the last partition may take the rest of the disk`);
      last = lastUsableLba;
    } else {
      last = start + BigInt(Math.ceil(req.sizeBytes / sectorSize)) - 1n;
    }
    if (last > lastUsableLba || last < start) {
      throw new InvalidInputError(`the disk is too small for partition ${req.name}`, {
        diskBytes,
        partition: req.name,
      });
    }
    partitions.push({
      name: req.name,
      typeGuid: req.typeGuid.toUpperCase(),
      uuid: randomUUID().toUpperCase(),
      firstLba: start,
      lastLba: last,
      attributes: req.attributes ?? 0n,
    });
    next = last + 1n;
  }
  return { diskGuid: randomUUID().toUpperCase(), sectorSize, firstUsableLba, lastUsableLba, partitions };
}

function encodeEntries(table: GptTable): Buffer {
  const buf = Buffer.alloc(entryCount * entrySize);
  for (const [i, p] of table.partitions.entries()) {
    const o = i * entrySize;
    guidToBytes(p.typeGuid).copy(buf, o);
    guidToBytes(p.uuid).copy(buf, o + 16);
    buf.writeBigUInt64LE(p.firstLba, o + 32);
    buf.writeBigUInt64LE(p.lastLba, o + 40);
    buf.writeBigUInt64LE(p.attributes, o + 48);
    const name = Buffer.from(p.name, "utf16le");
    if (name.length > 72) throw new InvalidInputError(`partition name ${p.name} is longer than 36 characters`);
    name.copy(buf, o + 56);
  }
  return buf;
}

function encodeHeader(
  table: GptTable,
  current: bigint,
  backup: bigint,
  entriesLba: bigint,
  entriesCrc: number,
): Buffer {
  const h = Buffer.alloc(table.sectorSize);
  h.write("EFI PART", 0, "ascii");
  h.writeUInt32LE(0x00010000, 8);
  h.writeUInt32LE(headerSize, 12);
  h.writeBigUInt64LE(current, 24);
  h.writeBigUInt64LE(backup, 32);
  h.writeBigUInt64LE(table.firstUsableLba, 40);
  h.writeBigUInt64LE(table.lastUsableLba, 48);
  guidToBytes(table.diskGuid).copy(h, 56);
  h.writeBigUInt64LE(entriesLba, 72);
  h.writeUInt32LE(entryCount, 80);
  h.writeUInt32LE(entrySize, 84);
  h.writeUInt32LE(entriesCrc, 88);
  h.writeUInt32LE(crc32(h.subarray(0, headerSize)), 16);
  return h;
}

/** The protective MBR: one 0xEE partition covering the disk; boot code left zero. */
function protectiveMbr(sectorSize: number, sectors: bigint): Buffer {
  const mbr = Buffer.alloc(sectorSize);
  const o = 446;
  mbr.writeUInt8(0x00, o);
  mbr.writeUInt8(0x00, o + 1);
  mbr.writeUInt8(0x02, o + 2);
  mbr.writeUInt8(0x00, o + 3);
  mbr.writeUInt8(0xee, o + 4);
  mbr.writeUInt8(0xff, o + 5);
  mbr.writeUInt8(0xff, o + 6);
  mbr.writeUInt8(0xff, o + 7);
  mbr.writeUInt32LE(1, o + 8);
  const size = sectors - 1n;
  mbr.writeUInt32LE(size > 0xffffffffn ? 0xffffffff : Number(size), o + 12);
  mbr.writeUInt16LE(0xaa55, 510);
  return mbr;
}

/**
 * Writes the table: backup copy first, then the primary and the MBR, then a sync,
 * so a crash part-way leaves either no valid primary or a complete one.
 * `keepBootCode`: the MBR's boot code (GRUB's, on an installed disk) stays.
 */
export async function writeGpt(
  dev: BlockTarget,
  table: GptTable,
  opts: { keepBootCode?: boolean } = {},
): Promise<void> {
  const ss = table.sectorSize;
  const sectors = BigInt(Math.floor(dev.sizeBytes / ss));
  const lastLba = sectors - 1n;
  const entries = encodeEntries(table);
  const entriesCrc = crc32(entries);
  const backupEntriesLba = lastLba - BigInt(entries.length / ss);
  await dev.write(Number(backupEntriesLba) * ss, entries);
  await dev.write(Number(lastLba) * ss, encodeHeader(table, lastLba, 1n, backupEntriesLba, entriesCrc));
  await dev.sync();
  await dev.write(2 * ss, entries);
  await dev.write(ss, encodeHeader(table, 1n, lastLba, 2n, entriesCrc));
  const mbr = protectiveMbr(ss, sectors);
  if (opts.keepBootCode) (await dev.read(0, 440)).copy(mbr, 0);
  await dev.write(0, mbr);
  await dev.sync();
}

function decodeHeader(h: Buffer):
  | {
      entriesLba: bigint;
      count: number;
      size: number;
      entriesCrc: number;
      diskGuid: string;
      firstUsable: bigint;
      lastUsable: bigint;
    }
  | undefined {
  if (h.subarray(0, 8).toString("ascii") !== "EFI PART") return undefined;
  const size = h.readUInt32LE(12);
  if (size < headerSize || size > h.length) return undefined;
  const copy = Buffer.from(h.subarray(0, size));
  const crc = copy.readUInt32LE(16);
  copy.writeUInt32LE(0, 16);
  if (crc32(copy) !== crc) return undefined;
  return {
    entriesLba: h.readBigUInt64LE(72),
    count: h.readUInt32LE(80),
    size: h.readUInt32LE(84),
    entriesCrc: h.readUInt32LE(88),
    diskGuid: guidFromBytes(h.subarray(56, 72)),
    firstUsable: h.readBigUInt64LE(40),
    lastUsable: h.readBigUInt64LE(48),
  };
}

/** Reads the primary table, else the backup; undefined when neither is valid. */
export async function readGpt(dev: BlockTarget): Promise<GptTable | undefined> {
  const ss = dev.sectorSize;
  const lastLba = BigInt(Math.floor(dev.sizeBytes / ss)) - 1n;
  for (const lba of [1n, lastLba]) {
    const header = decodeHeader(await dev.read(Number(lba) * ss, ss));
    if (!header || header.size < entrySize || header.count > 1024) continue;
    const entries = await dev.read(Number(header.entriesLba) * ss, header.count * header.size);
    if (crc32(entries) !== header.entriesCrc) continue;
    const partitions: GptPartition[] = [];
    for (let i = 0; i < header.count; i++) {
      const e = entries.subarray(i * header.size, (i + 1) * header.size);
      if (e.subarray(0, 16).every((b) => b === 0)) continue;
      const rawName = e.subarray(56, 128).toString("utf16le");
      partitions.push({
        typeGuid: guidFromBytes(e.subarray(0, 16)),
        uuid: guidFromBytes(e.subarray(16, 32)),
        firstLba: e.readBigUInt64LE(32),
        lastLba: e.readBigUInt64LE(40),
        attributes: e.readBigUInt64LE(48),
        name: rawName.replace(/\0.*$/s, ""),
      });
    }
    return {
      diskGuid: header.diskGuid,
      sectorSize: ss,
      firstUsableLba: header.firstUsable,
      lastUsableLba: header.lastUsable,
      partitions,
    };
  }
  return undefined;
}
