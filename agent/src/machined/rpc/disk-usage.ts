// MachineService.DiskUsage (talosctl usage): for each path, a walk in Go's filepath.Walk
// order where every directory's size is its own plus everything below it, sent once the
// walk has left it. Talos's limits: `recursion_depth` > 0 hides entries at that depth or
// deeper, files are sent only with `all`, and `threshold` hides entries smaller than it
// (or, negative, larger than its absolute value). Sizes count, they are not hidden.

import type * as grpc from "@grpc/grpc-js";
import path from "node:path";
import { pathErrorText } from "./errno.js";
import { normalizeRoot, walk, type FileInfo, type WalkFs } from "./list.js";
import { cancellation, send } from "./stream.js";

export interface DiskUsageRequest {
  recursion_depth?: number;
  all?: boolean;
  threshold?: number;
  paths?: string[];
}

export interface DiskUsageInfo {
  name: string;
  relative_name: string;
  size: number;
  error?: string;
}

const separators = (p: string) => p.split("/").length - 1;
const trimSlashes = (p: string) => p.replace(/\/+$/, "");

// Talos tests a plain string prefix, which treats /var/lib2 as inside /var/lib and then never sends /var/lib; a path prefix does not.
const inside = (dir: string, p: string) => dir === "" || p === dir || p.startsWith(dir + "/");

/** The entries for one path, in the order they are sent. */
export async function* usageOf(
  root: string,
  req: DiskUsageRequest,
  opts: { signal?: AbortSignal; fs?: WalkFs } = {},
): AsyncGenerator<DiskUsageInfo> {
  const depthLimit = req.recursion_depth ?? 0;
  const threshold = req.threshold ?? 0;
  const folders = new Map<string, DiskUsageInfo>();
  const out: DiskUsageInfo[] = [];

  const sendSize = (info: DiskUsageInfo, depth: number, isDir: boolean) => {
    const parent = folders.get(trimSlashes(path.dirname(info.name)));
    if (parent) parent.size += info.size;
    const skip =
      (depthLimit > 0 && depth >= depthLimit) ||
      (!isDir && !req.all) ||
      (threshold > 0 && info.size < threshold) ||
      (threshold < 0 && info.size > -threshold);
    if (!skip) out.push(info);
  };
  const rootDepth = separators(root);
  const flushFolders = (from: string, next: string) => {
    let dir = from;
    while (!inside(dir, next)) {
      const folder = folders.get(dir);
      if (folder) {
        sendSize(folder, separators(dir) - rootDepth, true);
        folders.delete(dir);
      }
      dir = trimSlashes(path.dirname(dir));
    }
  };

  const walker = walk(root, { maxDepth: -1, types: [], ...opts });
  // The root is examined on the first step; its failure is this path's only entry.
  let first: IteratorResult<FileInfo>;
  try {
    first = await walker.next();
  } catch (err) {
    yield {
      name: root,
      relative_name: root,
      size: 0,
      error: err instanceof Error ? err.message : pathErrorText("lstat", root, err),
    };
    return;
  }
  const entries = (async function* () {
    if (!first.done) yield first.value;
    yield* walker;
  })();

  // The directory the walk is in; every directory it leaves is sent (Talos flushes only when the depth drops, and so
  // never sends, nor counts in its parent, a directory followed by a sibling at its own depth).
  let prefix = root;
  for await (const fi of entries) {
    if (fi.error) {
      out.push({ name: fi.name, relative_name: fi.relative_name, size: 0, error: fi.error });
    } else {
      flushFolders(prefix, fi.name);
      // /proc/kcore reports the size of the address space, not of anything stored.
      const size = fi.name === "/proc/kcore" ? 0 : Math.max(0, fi.size ?? 0);
      const info = { name: fi.name, relative_name: fi.relative_name, size };
      if (fi.is_dir) folders.set(trimSlashes(fi.name), info);
      else sendSize(info, separators(fi.name) - rootDepth, false);
      prefix = fi.is_dir ? trimSlashes(fi.name) : trimSlashes(path.dirname(fi.name));
    }
    yield* out.splice(0);
  }
  const top = trimSlashes(root);
  const rootFolder = folders.get(top);
  if (rootFolder) {
    flushFolders(prefix, top);
    sendSize(rootFolder, 0, true);
  }
  yield* out.splice(0);
}

export async function streamDiskUsage(call: grpc.ServerWritableStream<DiskUsageRequest, unknown>): Promise<void> {
  const { signal, dispose } = cancellation(call);
  try {
    for (const p of call.request.paths ?? []) {
      for await (const info of usageOf(normalizeRoot(p), call.request, { signal })) {
        if (!(await send(call, info))) return;
      }
    }
  } finally {
    dispose();
  }
  if (!call.cancelled) call.end();
}
