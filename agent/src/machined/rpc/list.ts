// MachineService.List (talosctl ls): a walk of the tree under `root` in Go's
// filepath.Walk order (lexical, a directory before its entries), one FileInfo per
// entry, with Talos's depth rule and its error entries for what cannot be read.

import type * as grpc from "@grpc/grpc-js";
import { constants, promises as fs, type Stats } from "node:fs";
import path from "node:path";
import { pathError, pathErrorText } from "./errno.js";
import { cancellation, send } from "./stream.js";

/** machine.ListRequest.Type */
export const ListType = { REGULAR: 0, DIRECTORY: 1, SYMLINK: 2 } as const;

export interface ListRequest {
  root?: string;
  recurse?: boolean;
  recursion_depth?: number;
  types?: number[];
}

export interface FileInfo {
  name: string;
  relative_name: string;
  size?: number;
  mode?: number;
  modified?: number;
  is_dir?: boolean;
  link?: string;
  uid?: number;
  gid?: number;
  error?: string;
}

// Go's os.FileMode bits: talosctl renders `mode` with FileMode.String(), not as a unix st_mode.
const goMode = {
  dir: 2 ** 31,
  symlink: 2 ** 27,
  device: 2 ** 26,
  namedPipe: 2 ** 25,
  socket: 2 ** 24,
  setuid: 2 ** 23,
  setgid: 2 ** 22,
  charDevice: 2 ** 21,
  sticky: 2 ** 20,
};

/** A unix st_mode as Go's os.FileMode (as os.Lstat fills it). */
export function goFileMode(stMode: number): number {
  let mode = stMode & 0o777;
  switch (stMode & constants.S_IFMT) {
    case constants.S_IFBLK:
      mode += goMode.device;
      break;
    case constants.S_IFCHR:
      mode += goMode.device + goMode.charDevice;
      break;
    case constants.S_IFDIR:
      mode += goMode.dir;
      break;
    case constants.S_IFIFO:
      mode += goMode.namedPipe;
      break;
    case constants.S_IFLNK:
      mode += goMode.symlink;
      break;
    case constants.S_IFSOCK:
      mode += goMode.socket;
      break;
  }
  // S_ISUID, S_ISGID, S_ISVTX (not in Node's fs.constants)
  if (stMode & 0o4000) mode += goMode.setuid;
  if (stMode & 0o2000) mode += goMode.setgid;
  if (stMode & 0o1000) mode += goMode.sticky;
  return mode;
}

/** The root as Talos takes it: absolute, one trailing slash dropped, "/" when empty. */
export function normalizeRoot(root: string | undefined): string {
  let r = root ?? "";
  if (!r.startsWith("/")) r = "/" + r;
  if (r.endsWith("/")) r = r.slice(0, -1);
  return r === "" ? "/" : r;
}

/** -1 = unlimited; 0 (no recursion) still lists the root directory's entries. */
export function maxDepth(req: ListRequest): number {
  if (!req.recurse) return 0;
  return req.recursion_depth ? req.recursion_depth : -1;
}

// Talos counts separators, so entries of "/" sit at depth 0 where entries of "/etc" sit at 1; kept for the same listings.
function atMaxDepth(max: number, root: string, dir: string): boolean {
  if (max < 0 || dir === root) return false;
  const seps = (p: string) => p.split("/").length - 1;
  return seps(dir) - seps(root) >= max;
}

function matchesTypes(st: Stats, types: readonly number[]): boolean {
  if (types.length === 0) return true;
  return types.some(
    (t) =>
      (t === ListType.REGULAR && st.isFile()) ||
      (t === ListType.DIRECTORY && st.isDirectory()) ||
      (t === ListType.SYMLINK && st.isSymbolicLink()),
  );
}

// Go sorts directory names bytewise; JS's default sort compares UTF-16 units.
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** The filesystem calls the walk makes (fakes in tests produce the errors root never sees). */
export interface WalkFs {
  lstat(p: string): Promise<Stats>;
  readdir(p: string): Promise<string[]>;
  readlink(p: string): Promise<string>;
  realpath(p: string): Promise<string>;
}

export interface WalkOptions {
  maxDepth: number;
  types: readonly number[];
  signal?: AbortSignal;
  fs?: WalkFs;
}

const nodeFs: WalkFs = {
  lstat: (p) => fs.lstat(p),
  readdir: (p) => fs.readdir(p),
  readlink: (p) => fs.readlink(p),
  realpath: (p) => fs.realpath(p),
};

/**
 * Walks `root` (already normalized; a symlink root is followed). Throws when the root
 * itself cannot be examined; anything below it that cannot be read becomes an entry with `error`.
 * Unlike Talos, the depth limit also holds below directories the type filter leaves out
 * (Talos descends into those without limit).
 */
export async function* walk(rootPath: string, opts: WalkOptions): AsyncGenerator<FileInfo> {
  const fs = opts.fs ?? nodeFs;
  let root = rootPath;
  const rootStat = await fs.lstat(root).catch((err: unknown) => {
    throw pathError("lstat", root, err);
  });
  let st = rootStat;
  if (rootStat.isSymbolicLink()) {
    root = await fs.realpath(root).catch((err: unknown) => {
      throw pathError("lstat", root, err);
    });
    st = await fs.lstat(root).catch((err: unknown) => {
      throw pathError("lstat", root, err);
    });
  }
  yield* visit(root, root, st, opts, fs);
}

async function* visit(root: string, file: string, st: Stats, opts: WalkOptions, fs: WalkFs): AsyncGenerator<FileInfo> {
  if (opts.signal?.aborted) return;
  let names: string[] | undefined;
  let readError: string | undefined;
  if (st.isDirectory()) {
    try {
      names = (await fs.readdir(file)).sort(byteOrder);
    } catch (err) {
      readError = pathErrorText("open", file, err);
    }
  }
  if (readError !== undefined) {
    // An unreadable directory is reported once, as Go's Walk reports it, and not entered.
    yield { name: file, relative_name: "", error: readError };
    return;
  }
  if (matchesTypes(st, opts.types)) yield await describe(root, file, st, fs);
  if (!names || atMaxDepth(opts.maxDepth, root, file)) return;
  for (const name of names) {
    const child = path.join(file, name);
    let cst: Stats;
    try {
      cst = await fs.lstat(child);
    } catch (err) {
      yield { name: child, relative_name: "", error: pathErrorText("lstat", child, err) };
      continue;
    }
    yield* visit(root, child, cst, opts, fs);
  }
}

async function describe(root: string, file: string, st: Stats, fs: WalkFs): Promise<FileInfo> {
  const relative = file === root && !st.isDirectory() ? path.basename(file) : path.relative(root, file) || ".";
  const info: FileInfo = {
    name: file,
    relative_name: relative,
    size: st.size,
    mode: goFileMode(st.mode),
    modified: Math.floor(st.mtimeMs / 1000),
    is_dir: st.isDirectory(),
    uid: st.uid,
    gid: st.gid,
  };
  if (st.isSymbolicLink()) {
    try {
      info.link = await fs.readlink(file);
    } catch (err) {
      return { name: file, relative_name: relative, error: pathErrorText("readlink", file, err) };
    }
  }
  return info;
}

/** Streams the listing; stops walking as soon as the client cancels. */
export async function streamList(call: grpc.ServerWritableStream<ListRequest, unknown>): Promise<void> {
  const { signal, dispose } = cancellation(call);
  try {
    const entries = walk(normalizeRoot(call.request.root), {
      maxDepth: maxDepth(call.request),
      types: call.request.types ?? [],
      signal,
    });
    for await (const entry of entries) {
      if (!(await send(call, entry))) return;
    }
  } finally {
    dispose();
  }
  if (!call.cancelled) call.end();
}
