// The tar subset OCI archives and layers need: ustar entries (files, directories and
// symlinks, a file's extended attributes in a pax record as containerd applies them)
// written with zero times and owners so a rebuild gives the same digests, and an
// index of a tar file's entries (offset and size) for reading members in place.

import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import { Readable, type Writable } from "node:stream";
import { InvalidInputError } from "../errors.js";

const block = 512;

export interface TarInput {
  name: string;
  /** Absent for a directory or a symlink. */
  content?: Buffer | { file: string };
  /** A symlink's target. */
  link?: string;
  mode?: number;
  /** Extended attributes (e.g. security.capability), written as pax SCHILY.xattr records. */
  xattrs?: Record<string, Buffer>;
}

type EntryType = "file" | "directory" | "symlink" | "pax";
const typeflags: Record<EntryType, string> = { file: "0", directory: "5", symlink: "2", pax: "x" };

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

function header(name: string, size: number, mode: number, type: EntryType, link = ""): Buffer {
  const h = Buffer.alloc(block);
  let prefix = "";
  let base = name;
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf("/", 155);
    if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100)
      throw new InvalidInputError(`tar member name too long: ${name}`);
    prefix = name.slice(0, cut);
    base = name.slice(cut + 1);
  }
  h.write(base, 0, 100);
  h.write(octal(mode, 8), 100);
  h.write(octal(0, 8), 108);
  h.write(octal(0, 8), 116);
  h.write(octal(size, 12), 124);
  h.write(octal(0, 12), 136);
  h.write("        ", 148);
  h.write(typeflags[type], 156);
  if (Buffer.byteLength(link) > 100) throw new InvalidInputError(`tar symlink target too long: ${name} -> ${link}`);
  h.write(link, 157, 100);
  h.write("ustar\0" + "00", 257);
  h.write(prefix, 345, 155);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + " ", 148);
  return h;
}

function write(out: Writable, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => out.write(data, (err) => (err ? reject(err) : resolve())));
}

/** pax records "LEN SCHILY.xattr.NAME=VALUE\n", LEN counting the whole record in bytes (values may be binary). */
function paxRecords(xattrs: Record<string, Buffer>): Buffer {
  const records = Object.entries(xattrs).map(([name, value]) => {
    const body = Buffer.concat([Buffer.from(` SCHILY.xattr.${name}=`), value, Buffer.from("\n")]);
    // The length prefix counts its own digits: grow it until it is stable.
    let len = body.length + 1;
    while (String(len).length + body.length !== len) len = String(len).length + body.length;
    return Buffer.concat([Buffer.from(String(len)), body]);
  });
  return Buffer.concat(records);
}

/** Writes a tar archive of `entries` in order to `file`. */
export async function writeTar(file: string, entries: TarInput[]): Promise<void> {
  const out = createWriteStream(file);
  const closed = new Promise<void>((resolve, reject) => out.on("close", resolve).on("error", reject));
  try {
    for (const e of entries) {
      if (e.xattrs && Object.keys(e.xattrs).length > 0) {
        const pax = paxRecords(e.xattrs);
        await write(out, header(`PaxHeaders/${e.name}`.slice(0, 100), pax.length, 0o644, "pax"));
        await write(out, pax);
        if (pax.length % block) await write(out, Buffer.alloc(block - (pax.length % block)));
      }
      if (e.link !== undefined) {
        await write(out, header(e.name, 0, e.mode ?? 0o777, "symlink", e.link));
        continue;
      }
      const dir = e.content === undefined;
      const size = dir ? 0 : Buffer.isBuffer(e.content) ? e.content.length : (await fs.stat(e.content!.file)).size;
      await write(
        out,
        header(
          dir ? e.name.replace(/\/?$/, "/") : e.name,
          size,
          e.mode ?? (dir ? 0o755 : 0o644),
          dir ? "directory" : "file",
        ),
      );
      if (Buffer.isBuffer(e.content)) await write(out, e.content);
      else if (e.content) for await (const chunk of createReadStream(e.content.file)) await write(out, chunk as Buffer);
      if (size % block) await write(out, Buffer.alloc(block - (size % block)));
    }
    await write(out, Buffer.alloc(2 * block));
  } finally {
    out.end();
  }
  await closed;
}

export interface TarMember {
  name: string;
  type: "file" | "directory" | "symlink" | "other";
  /** Where the member's data starts in the archive. */
  offset: number;
  size: number;
  mode: number;
  /** A symlink's target. */
  link?: string;
  /** From pax SCHILY.xattr records. */
  xattrs?: Record<string, Buffer>;
}

/** A pax extended header's records, keys to raw values (binary-safe: each record says its length). */
function parsePax(pax: Buffer): Map<string, Buffer> {
  const records = new Map<string, Buffer>();
  let at = 0;
  while (at < pax.length) {
    const space = pax.indexOf(0x20, at);
    const len = parseInt(pax.subarray(at, space).toString("ascii"), 10);
    if (space < 0 || !Number.isSafeInteger(len) || len <= 0 || at + len > pax.length)
      throw new InvalidInputError(`bad pax record at byte ${at}`);
    const record = pax.subarray(space + 1, at + len - 1);
    const eq = record.indexOf(0x3d);
    records.set(record.subarray(0, eq).toString("utf8"), record.subarray(eq + 1));
    at += len;
  }
  return records;
}

const xattrPrefix = "SCHILY.xattr.";

function field(h: Buffer, at: number, len: number): string {
  const s = h.subarray(at, at + len);
  const end = s.indexOf(0);
  return s.subarray(0, end < 0 ? len : end).toString("utf8");
}

/** Lists a tar file's members (ustar, with pax `path` records honoured). */
export async function listTar(file: string): Promise<TarMember[]> {
  const fh = await fs.open(file, "r");
  try {
    const { size: total } = await fh.stat();
    const members: TarMember[] = [];
    let pos = 0;
    let pax = new Map<string, Buffer>();
    while (pos + block <= total) {
      const h = Buffer.alloc(block);
      await fh.read(h, 0, block, pos);
      if (h.every((b) => b === 0)) break;
      let sum = 0;
      for (let i = 0; i < block; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
      if (sum !== parseInt(field(h, 148, 8).trim() || "0", 8))
        throw new InvalidInputError(`${file}: bad tar header checksum at offset ${pos}`, { file, offset: pos });
      const size = parseInt(field(h, 124, 12).trim() || "0", 8);
      const typeflag = String.fromCharCode(h[156]!);
      const prefix = field(h, 345, 155);
      const name = pax.get("path")?.toString("utf8") ?? (prefix ? `${prefix}/${field(h, 0, 100)}` : field(h, 0, 100));
      const offset = pos + block;
      if (offset + size > total)
        throw new InvalidInputError(`${file}: tar member ${name} is truncated`, { file, member: name });
      pos = offset + Math.ceil(size / block) * block;
      if (typeflag === "x") {
        const body = Buffer.alloc(size);
        await fh.read(body, 0, size, offset);
        pax = parsePax(body);
        continue;
      }
      const records = pax;
      pax = new Map();
      if (typeflag === "g") continue;
      const type =
        typeflag === "0" || typeflag === "\0"
          ? "file"
          : typeflag === "5"
            ? "directory"
            : typeflag === "2"
              ? "symlink"
              : "other";
      const member: TarMember = {
        name: name.replace(/^\.\//, "").replace(/\/$/, ""),
        type,
        offset,
        size,
        mode: parseInt(field(h, 100, 8).trim() || "0", 8),
      };
      if (type === "symlink") member.link = records.get("linkpath")?.toString("utf8") ?? field(h, 157, 100);
      const xattrs = [...records].filter(([k]) => k.startsWith(xattrPrefix));
      if (xattrs.length > 0)
        member.xattrs = Object.fromEntries(xattrs.map(([k, v]) => [k.slice(xattrPrefix.length), v]));
      members.push(member);
    }
    return members;
  } finally {
    await fh.close();
  }
}

/** Reads a small member whole. */
export async function readMember(file: string, m: TarMember): Promise<Buffer> {
  const fh = await fs.open(file, "r");
  try {
    const b = Buffer.alloc(m.size);
    await fh.read(b, 0, m.size, m.offset);
    return b;
  } finally {
    await fh.close();
  }
}

/** A stream of one member's bytes, in chunks of `chunkBytes` (Node's default 64 KiB unless given). */
export function memberStream(file: string, m: TarMember, chunkBytes?: number): Readable {
  // createReadStream refuses an end before its start, which an empty member would give.
  return m.size === 0
    ? Readable.from([])
    : createReadStream(file, {
        start: m.offset,
        end: m.offset + m.size - 1,
        ...(chunkBytes ? { highWaterMark: chunkBytes } : {}),
      });
}
