import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

// Compiled to dist/test/unit/scripts: the repository is four levels up.
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");
const checker = path.join(repo, "scripts", "commit-msg.mjs");
const hook = path.join(repo, "scripts", "git-hooks", "commit-msg");

function check(message: string): { status: number | null; stderr: string } {
  const dir = mkdtempSync(path.join(tmpdir(), "commit-msg-"));
  try {
    const file = path.join(dir, "COMMIT_EDITMSG");
    writeFileSync(file, message);
    const r = spawnSync(process.execPath, [checker, file], { encoding: "utf8" });
    return { status: r.status, stderr: r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const body = "\n\nWhy it changed, and what was verified (unit machined 12/12).\n";

test("commit-msg: a scoped imperative header, a blank line and a body pass; so do several scopes, paths and git's merges", () => {
  for (const header of [
    "machined: run udevd before the API server",
    "apid/director, docs: name the routes",
    "README: the upgrade section in two steps",
    "node-exports.py: keep the exports the bundle needs",
    "x".repeat(20) + ": " + "y".repeat(50),
  ]) {
    assert.deepEqual(check(header + body), { status: 0, stderr: "" }, header);
  }
  assert.equal(check("Merge branch 'etcd': etcd, its PKI and the RPCs\n").status, 0);
  assert.equal(check("Merge branch 'main' into seams\n\n# Conflicts:\n#\tagent/src/machined/machined.ts\n").status, 0);
});

test("commit-msg: git's comment lines and the verbose diff are not part of the message", () => {
  const message =
    "sys: one host:port splitter" +
    body +
    "# Please enter the commit message\n# ------------------------ >8 ------------------------\ndiff --git a/x b/x\n" +
    "+".repeat(200) +
    "\n";
  assert.equal(check(message).status, 0);
});

test("commit-msg: each broken rule is named", () => {
  const cases: [string, string][] = [
    ["machined: " + "a".repeat(63) + body, "the header is 73 characters; at most 72"],
    ["run udevd before the API server" + body, "the header is not `scope: subject`"],
    ["two words: run udevd" + body, "the header is not `scope: subject`"],
    ["machined:run udevd" + body, "the header is not `scope: subject`"],
    ["machined: added udevd" + body, 'the subject starts with "added"'],
    ["machined: adding udevd" + body, 'the subject starts with "adding"'],
    ["machined: Adds udevd" + body, 'the subject starts with "adds"'],
    ["machined: run udevd." + body, "the subject ends with a period"],
    ["machined: run udevd\nbefore the API" + body, "the second line is not blank"],
    ["machined: run udevd\n", "there is no body"],
    ["machined: run udevd\n\n\n", "there is no body"],
    ["\n\n# only comments\n", "the message is empty"],
  ];
  for (const [message, problem] of cases) {
    const r = check(message);
    assert.equal(r.status, 1, message);
    assert.ok(r.stderr.includes(problem), `${JSON.stringify(message)}: ${r.stderr}`);
  }
  // Imperative verbs that end as a past tense or a gerund would.
  assert.equal(check("oci: embed the registry's digest" + body).status, 0);
  assert.equal(check("services: bring syslogd up first" + body).status, 0);
});

test("commit-msg: the hook refuses a commit with a bad message and keeps one with a good message; --since names the bad ones", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "commit-msg-repo-"));
  const git = (...args: string[]) =>
    execFileSync(
      "git",
      [
        "-C",
        dir,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "-c",
        `core.hooksPath=${path.dirname(hook)}`,
        ...args,
      ],
      { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
    );
  try {
    execFileSync("git", ["init", "-q", dir]);
    // The hook runs the checker of the repository it is in.
    execFileSync("mkdir", ["-p", path.join(dir, "scripts")]);
    writeFileSync(path.join(dir, "scripts", "commit-msg.mjs"), execFileSync("cat", [checker]));
    git("add", "-A");
    git("commit", "-q", "-m", "scripts: add the message checker", "-m", "So every commit reads as history.");
    const base = git("rev-parse", "HEAD").trim();
    assert.throws(
      () => git("commit", "-q", "--allow-empty", "-m", "fixed things"),
      /the header is not `scope: subject`/,
    );
    assert.equal(git("rev-parse", "HEAD").trim(), base);
    git(
      "commit",
      "-q",
      "--allow-empty",
      "-m",
      "scripts: keep an empty commit",
      "-m",
      "To prove the hook lets it through.",
    );
    git("commit", "-q", "--allow-empty", "--no-verify", "-m", "scripts: Updates things");
    const r = spawnSync(process.execPath, [path.join(dir, "scripts", "commit-msg.mjs"), "--since", base], {
      cwd: dir,
      encoding: "utf8",
    });
    assert.equal(r.status, 1);
    assert.match(r.stdout, /2 commits after [0-9a-f]{12} checked, 1 with problems/);
    assert.match(r.stderr, /scripts: Updates things\n {2}- the subject starts with "updates"/);
    assert.match(r.stderr, /there is no body/);
    assert.doesNotMatch(r.stderr, /keep an empty commit/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("commit-msg: --since a commit not in the clone says so", () => {
  const r = spawnSync(process.execPath, [checker, "--since", "0".repeat(40)], { cwd: repo, encoding: "utf8" });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /is not in this clone/);
});
