// MachineService.Copy (talosctl cp): the tree under an absolute path as a tar.gz stream of
// common.Data chunks. As Talos's archiver: the root directory itself is not an entry,
// names are relative to it (directories end in "/"), /proc-like files that report size 0
// are read up to 4 KiB to learn their size, and what cannot be archived (sockets,
// unreadable files) is skipped and reported in a last message's metadata.error.

import type * as grpc from "@grpc/grpc-js";
import { constants, promises as fs, type Stats } from "node:fs";
import path from "node:path";
import { pipeline, Readable } from "node:stream";
import { createGzip } from "node:zlib";
import { InvalidInputError, SystemError } from "../../errors.js";
import { errnoText, pathErrorText } from "./errno.js";
import { walk } from "./list.js";
import { cancellation, send } from "./stream.js";
import { dataPadding, encodeHeader, TarType, trailer, type TarHeader } from "./tar.js";

const probeSize = 4096;
const chunkSize = 64 * 1024;

export interface CopyRequest {
  root_path?: string;
}

/** go-multierror's text, which talosctl prints: "N error(s) occurred:\n\t* ...\n\n". */
export function multiErrorText(errors: readonly string[]): string {
  const head = errors.length === 1 ? "1 error occurred:" : `${errors.length} errors occurred:`;
  return `${head}\n${errors.map((e) => `\t* ${e}`).join("\n")}\n\n`;
}

function typeOf(st: Stats): TarHeader["type"] | undefined {
  if (st.isFile()) return TarType.file;
  if (st.isDirectory()) return TarType.dir;
  if (st.isSymbolicLink()) return TarType.symlink;
  if (st.isCharacterDevice()) return TarType.char;
  if (st.isBlockDevice()) return TarType.block;
  if (st.isFIFO()) return TarType.fifo;
  return undefined;
}

// Linux's dev_t encoding (glibc's major()/minor()).
const major = (rdev: number) => Number(((BigInt(rdev) >> 8n) & 0xfffn) | ((BigInt(rdev) >> 32n) & ~0xfffn));
const minor = (rdev: number) => Number((BigInt(rdev) & 0xffn) | ((BigInt(rdev) >> 12n) & ~0xffn));

/** One entry: header, then its data for a regular file. Throws the reason an entry is skipped. */
async function* entry(file: string, relative: string, st: Stats): AsyncGenerator<Buffer> {
  const type = typeOf(st);
  if (!type)
    throw new SystemError(st.isSocket() ? "archive/tar: sockets not supported" : "archive/tar: unknown file mode", {
      file,
    });
  const header: TarHeader = {
    name: type === TarType.dir ? `${relative}/` : relative,
    mode: st.mode & 0o7777,
    uid: st.uid,
    gid: st.gid,
    size: type === TarType.file ? st.size : 0,
    mtime: Math.floor(st.mtimeMs / 1000),
    type,
  };
  if (type === TarType.symlink) header.linkname = await fs.readlink(file);
  if (type === TarType.char || type === TarType.block)
    Object.assign(header, { devmajor: major(st.rdev), devminor: minor(st.rdev) });
  if (type !== TarType.file) {
    yield encodeHeader(header);
    return;
  }
  const fh = await fs.open(file, constants.O_RDONLY | constants.O_NONBLOCK).catch((err: unknown) => {
    throw new SystemError(pathErrorText("open", file, err), { file });
  });
  try {
    if (header.size === 0) {
      // Size 0 may still have content (/proc, /sys): a short first read is the whole file; a full one is kept empty.
      const probe = Buffer.alloc(probeSize);
      const n = await fh.read(probe, 0, probeSize, null).then(
        (r) => r.bytesRead,
        (err: NodeJS.ErrnoException) => {
          if (err.code === "EINVAL") return probeSize;
          throw err;
        },
      );
      const data = n < probeSize ? probe.subarray(0, n) : Buffer.alloc(0);
      yield encodeHeader({ ...header, size: data.length });
      if (data.length > 0) yield Buffer.concat([data, dataPadding(data.length)]);
      return;
    }
    yield encodeHeader(header);
    // Exactly the size in the header: a file that grew is cut, one that shrank is padded with zeros.
    let written = 0;
    const buf = Buffer.alloc(chunkSize);
    while (written < header.size) {
      const { bytesRead } = await fh.read(buf, 0, Math.min(chunkSize, header.size - written), null);
      if (bytesRead === 0) break;
      written += bytesRead;
      yield Buffer.from(buf.subarray(0, bytesRead));
    }
    if (written < header.size) yield Buffer.alloc(header.size - written);
    yield dataPadding(header.size);
  } finally {
    await fh.close();
  }
}

/** The uncompressed tar of `root` (entries that fail are collected in `errors`). */
export async function* tarTree(root: string, errors: string[], signal?: AbortSignal): AsyncGenerator<Buffer> {
  for await (const item of walk(root, { maxDepth: -1, types: [], ...(signal ? { signal } : {}) })) {
    if (item.error) {
      errors.push(`skipping ${JSON.stringify(item.name)}: ${item.error}`);
      continue;
    }
    let st: Stats;
    try {
      st = await fs.lstat(item.name);
    } catch (err) {
      errors.push(`skipping ${JSON.stringify(item.name)}: ${pathErrorText("lstat", item.name, err)}`);
      continue;
    }
    if (item.relative_name === "." && st.isDirectory()) continue;
    // Parts are held back (16 at a time) so an entry that fails early (a sysfs attribute whose read fails
    // after its header) is skipped whole; one that fails after some of it went out cannot be, and ends the archive.
    const parts: Buffer[] = [];
    let sent = false;
    try {
      for await (const part of entry(item.name, item.relative_name, st)) {
        parts.push(part);
        if (parts.length >= 16) {
          sent = true;
          yield Buffer.concat(parts.splice(0));
        }
      }
    } catch (err) {
      if (sent) throw err;
      errors.push(
        `skipping ${JSON.stringify(item.name)}: ${err instanceof SystemError ? err.message : errnoText(err)}`,
      );
      continue;
    }
    if (parts.length > 0) yield Buffer.concat(parts);
  }
  yield trailer;
}

export async function streamCopy(call: grpc.ServerWritableStream<CopyRequest, unknown>): Promise<void> {
  const root = path.normalize(call.request.root_path ?? "");
  if (!path.isAbsolute(root)) throw new InvalidInputError(`path is not absolute ${root}`, { root });
  const rootPath = root.length > 1 ? root.replace(/\/$/, "") : root;
  const { signal, dispose } = cancellation(call);
  const errors: string[] = [];
  try {
    // The root must be there before any byte is sent; otherwise the only message says why.
    const ok = await fs.lstat(rootPath).then(
      () => true,
      (err: unknown) => {
        errors.push(pathErrorText("lstat", rootPath, err));
        return false;
      },
    );
    if (ok) {
      const gz = createGzip();
      // pipeline hands a failed walk on to gz, read below (.pipe would leave it an unheard 'error'), and a destroyed gz ends the walk.
      pipeline(Readable.from(tarTree(rootPath, errors, signal)), gz, () => undefined);
      for await (const chunk of gz) {
        if (!(await send(call, { bytes: chunk as Buffer }))) {
          gz.destroy();
          return;
        }
      }
    }
    if (errors.length > 0) {
      const text = ok ? multiErrorText(errors) : errors[0]!;
      if (!(await send(call, { metadata: { error: text } }))) return;
    }
  } finally {
    dispose();
  }
  if (!call.cancelled) call.end();
}
