// The tar subset OCI archives and layers need: ustar entries (files and directories)
// written with zero times and owners so a rebuild gives the same digests, and an
// index of a tar file's entries (offset and size) for reading members in place.

import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import { Readable, type Writable } from "node:stream";
import { InvalidInputError } from "../errors.js";

const block = 512;

export interface TarInput {
  name: string;
  /** Absent for a directory. */
  content?: Buffer | { file: string };
  mode?: number;
}

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

function header(name: string, size: number, mode: number, dir: boolean): Buffer {
  const h = Buffer.alloc(block);
  let prefix = "";
  let base = name;
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf("/", 155);
    if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100) throw new InvalidInputError(`tar member name too long: ${name}`);
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
  h.write(dir ? "5" : "0", 156);
  h.write("ustar\0" + "00", 257);
  h.write(prefix, 345, 155);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + " ", 148);
  return h;
}

function write(out: Writable, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => (out.write(data, (err) => (err ? reject(err) : resolve()))));
}

/** Writes a tar archive of `entries` in order to `file`. */
export async function writeTar(file: string, entries: TarInput[]): Promise<void> {
  const out = createWriteStream(file);
  const closed = new Promise<void>((resolve, reject) => out.on("close", resolve).on("error", reject));
  try {
    for (const e of entries) {
      const dir = e.content === undefined;
      const size = dir ? 0 : Buffer.isBuffer(e.content) ? e.content.length : (await fs.stat(e.content!.file)).size;
      await write(out, header(dir ? e.name.replace(/\/?$/, "/") : e.name, size, e.mode ?? (dir ? 0o755 : 0o644), dir));
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
  type: "file" | "directory" | "other";
  /** Where the member's data starts in the archive. */
  offset: number;
  size: number;
}

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
    let paxPath: string | undefined;
    while (pos + block <= total) {
      const h = Buffer.alloc(block);
      await fh.read(h, 0, block, pos);
      if (h.every((b) => b === 0)) break;
      let sum = 0;
      for (let i = 0; i < block; i++) sum += i >= 148 && i < 156 ? 32 : h[i]!;
      if (sum !== parseInt(field(h, 148, 8).trim() || "0", 8)) throw new InvalidInputError(`${file}: bad tar header checksum at offset ${pos}`, { file, offset: pos });
      const size = parseInt(field(h, 124, 12).trim() || "0", 8);
      const typeflag = String.fromCharCode(h[156]!);
      const prefix = field(h, 345, 155);
      const name = paxPath ?? (prefix ? `${prefix}/${field(h, 0, 100)}` : field(h, 0, 100));
      const offset = pos + block;
      if (offset + size > total) throw new InvalidInputError(`${file}: tar member ${name} is truncated`, { file, member: name });
      pos = offset + Math.ceil(size / block) * block;
      if (typeflag === "x") {
        const pax = Buffer.alloc(size);
        await fh.read(pax, 0, size, offset);
        paxPath = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(pax.toString("utf8"))?.[1];
        continue;
      }
      paxPath = undefined;
      if (typeflag === "g") continue;
      const type = typeflag === "0" || typeflag === "\0" ? "file" : typeflag === "5" ? "directory" : "other";
      members.push({ name: name.replace(/^\.\//, "").replace(/\/$/, ""), type, offset, size });
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
  return m.size === 0 ? Readable.from([]) : createReadStream(file, { start: m.offset, end: m.offset + m.size - 1, ...(chunkBytes ? { highWaterMark: chunkBytes } : {}) });
}
