import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { lstat, readdir, readlink, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { NotFoundError } from "../../../../agent/src/errors.js";
import {
  goFileMode,
  ListType,
  maxDepth,
  normalizeRoot,
  streamList,
  walk,
  type FileInfo,
  type ListRequest,
} from "../../../../agent/src/machined/rpc/list.js";
import { FakeCall } from "./fake-call.js";

// root/
//   a.txt (5 bytes)   b/ (c.txt, d/ (e.txt))   link -> a.txt
const root = mkdtempSync(path.join(os.tmpdir(), "basalt-list-"));
after(() => rmSync(root, { recursive: true, force: true }));
writeFileSync(path.join(root, "a.txt"), "hello");
mkdirSync(path.join(root, "b", "d"), { recursive: true });
writeFileSync(path.join(root, "b", "c.txt"), "c");
writeFileSync(path.join(root, "b", "d", "e.txt"), "e");
symlinkSync("a.txt", path.join(root, "link"));

async function list(req: ListRequest): Promise<FileInfo[]> {
  const out: FileInfo[] = [];
  for await (const e of walk(normalizeRoot(req.root), { maxDepth: maxDepth(req), types: req.types ?? [] })) out.push(e);
  return out;
}
const rel = (entries: FileInfo[]) => entries.map((e) => e.relative_name);

test("without recurse: the root and its entries, in lexical order", async () => {
  assert.deepEqual(rel(await list({ root })), [".", "a.txt", "b", "link"]);
});

test("recursion_depth bounds the walk; 0 with recurse means no bound", async () => {
  assert.deepEqual(rel(await list({ root, recurse: true, recursion_depth: 1 })), [".", "a.txt", "b", "link"]);
  assert.deepEqual(rel(await list({ root, recurse: true, recursion_depth: 2 })), [
    ".",
    "a.txt",
    "b",
    "b/c.txt",
    "b/d",
    "link",
  ]);
  assert.deepEqual(rel(await list({ root, recurse: true })), [
    ".",
    "a.txt",
    "b",
    "b/c.txt",
    "b/d",
    "b/d/e.txt",
    "link",
  ]);
});

test("types filter: only the kinds asked for, the depth bound still holding", async () => {
  assert.deepEqual(rel(await list({ root, recurse: true, types: [ListType.REGULAR] })), [
    "a.txt",
    "b/c.txt",
    "b/d/e.txt",
  ]);
  assert.deepEqual(
    rel(await list({ root, recurse: true, recursion_depth: 2, types: [ListType.DIRECTORY, ListType.SYMLINK] })),
    [".", "b", "b/d", "link"],
  );
  assert.deepEqual(rel(await list({ root, types: [ListType.REGULAR] })), ["a.txt"]);
});

test("FileInfo fields: size, Go file mode, directory flag, link target, owner", async () => {
  const entries = await list({ root });
  const byName = new Map(entries.map((e) => [e.relative_name, e]));
  const a = byName.get("a.txt")!;
  assert.equal(a.name, path.join(root, "a.txt"));
  assert.equal(a.size, 5);
  assert.equal(a.is_dir, false);
  assert.equal(a.uid, process.getuid!());
  assert.ok(Math.abs(a.modified! - Date.now() / 1000) < 60);
  assert.equal(byName.get("b")!.mode! >= 2 ** 31, true, "directories carry Go's ModeDir bit");
  assert.equal(byName.get("b")!.is_dir, true);
  assert.equal(byName.get("link")!.link, "a.txt");
  assert.equal(byName.get("link")!.mode! & (2 ** 27), 2 ** 27, "ModeSymlink");
});

test("Go file modes from unix modes", () => {
  assert.equal(goFileMode(0o100644), 0o644);
  assert.equal(goFileMode(0o040755), 2 ** 31 + 0o755);
  assert.equal(goFileMode(0o120777), 2 ** 27 + 0o777);
  assert.equal(goFileMode(0o020620), 2 ** 26 + 2 ** 21 + 0o620, "character device");
  assert.equal(goFileMode(0o041777), 2 ** 31 + 2 ** 20 + 0o777, "sticky /tmp");
  assert.equal(goFileMode(0o104755), 2 ** 23 + 0o755, "setuid");
});

test("root forms: relative, trailing slash, a file, a symlink to a directory; a missing root is NotFound", async () => {
  assert.equal(normalizeRoot(""), "/");
  assert.equal(normalizeRoot("etc/"), "/etc");
  assert.deepEqual(rel(await list({ root: root + "/" })), [".", "a.txt", "b", "link"]);
  const file = await list({ root: path.join(root, "b", "c.txt") });
  assert.deepEqual(rel(file), ["c.txt"]);
  symlinkSync(path.join(root, "b"), path.join(root, "b-link"));
  const viaLink = await list({ root: path.join(root, "b-link") });
  assert.deepEqual(rel(viaLink), [".", "c.txt", "d"]);
  assert.equal(viaLink[0]!.name, path.join(root, "b"), "the link is followed, as Talos resolves the root");
  rmSync(path.join(root, "b-link"));
  await assert.rejects(
    list({ root: path.join(root, "nope") }),
    (err: Error) => err instanceof NotFoundError && /^lstat .*nope: no such file or directory$/.test(err.message),
  );
});

test("an unreadable directory is one entry with its error and is not entered; an entry that vanished is an error entry", async () => {
  const denied = Object.assign(new Error(`EACCES: permission denied, scandir '${path.join(root, "b")}'`), {
    code: "EACCES",
  });
  const gone = Object.assign(new Error(`ENOENT: no such file or directory, lstat '${path.join(root, "link")}'`), {
    code: "ENOENT",
  });
  const fakeFs = {
    lstat: async (p: string) => (p.endsWith("/link") ? Promise.reject(gone) : lstat(p)),
    readdir: async (p: string) => (p.endsWith("/b") ? Promise.reject(denied) : readdir(p)),
    readlink,
    realpath,
  };
  const entries: FileInfo[] = [];
  for await (const e of walk(root, { maxDepth: -1, types: [], fs: fakeFs })) entries.push(e);
  assert.deepEqual(
    entries.map((e) => [e.name.slice(root.length), e.relative_name, e.error ?? ""]),
    [
      ["", ".", ""],
      ["/a.txt", "a.txt", ""],
      ["/b", "", `open ${path.join(root, "b")}: permission denied`],
      ["/link", "", `lstat ${path.join(root, "link")}: no such file or directory`],
    ],
  );
});

test("streamList sends every entry, ends, and stops early on cancel without leftover listeners", async () => {
  const call = new FakeCall<ListRequest>({ root, recurse: true });
  await streamList(call.asStream());
  assert.equal(call.written.length, 7);
  assert.ok(call.ended);
  assert.equal(call.leftover(), 0);

  const cancelled = new FakeCall<ListRequest>({ root, recurse: true });
  cancelled.onWrite = (n) => {
    if (n === 2) cancelled.cancel();
  };
  await streamList(cancelled.asStream());
  assert.equal(cancelled.written.length, 2);
  assert.equal(cancelled.ended, false);
  assert.equal(cancelled.leftover(), 0);
});
