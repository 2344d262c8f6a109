#!/usr/bin/env node
// Checks commit messages against the project's form, a subset of the rules
// Talos's .conform.yaml enforces:
//   - a header `scope: subject` of at most 72 characters, the scope one or more
//     lower-level names (`machined`, `apid/director`, `README`, `test, docs`);
//   - a subject in the imperative ("add", not "added", "adding" or "adds"),
//     not ending in a period;
//   - a blank second line, then a body saying why (and what was verified).
// Git's own merge subjects ("Merge branch ...") are accepted as they are.
//
// Usage:
//   commit-msg.mjs FILE         check one message (the commit-msg hook)
//   commit-msg.mjs --since REV  check every commit in REV..HEAD (CI)
//   commit-msg.mjs --since      the same from the first commit held to this form
// Prints each problem; exits 1 on any.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** The commit from which every commit follows the form; the ones before it are history as it was written. */
export const FORM_SINCE = "a6e1ae9930f1f87ba6c7f564eff8f8cae9930324";

const MAX_HEADER = 72;
const scopeName = "[A-Za-z0-9][A-Za-z0-9._/+-]*";
const headerRe = new RegExp(String.raw`^(${scopeName}(?:, ${scopeName})*): (\S.*)$`);
// Words ending so that are imperative verbs all the same.
const notPastOrGerund = new Set(["embed", "feed", "need", "seed", "speed", "shed", "bring", "string", "spring"]);
// Third-person forms a subject starts with when it describes instead of commanding.
const thirdPerson = new Set([
  "adds",
  "allows",
  "builds",
  "changes",
  "checks",
  "cleans",
  "fixes",
  "handles",
  "implements",
  "improves",
  "introduces",
  "keeps",
  "makes",
  "moves",
  "removes",
  "renames",
  "replaces",
  "runs",
  "sets",
  "splits",
  "starts",
  "stops",
  "supports",
  "updates",
  "uses",
  "waits",
]);

/** The problems of one commit message (comment lines and the diff of `commit -v` are not part of it). */
export function checkMessage(text) {
  const cut = text.indexOf("\n# ------------------------ >8 ------------------------");
  const lines = (cut >= 0 ? text.slice(0, cut) : text).split("\n").filter((l) => !l.startsWith("#"));
  while (lines.length > 0 && lines.at(-1).trim() === "") lines.pop();
  const header = lines[0] ?? "";
  if (header.trim() === "") return ["the message is empty"];
  if (
    /^Merge (branch|remote-tracking branch|tag|commit|pull request|'|[0-9a-f]{7,40})/.test(header) ||
    /^Merge .* into /.test(header)
  )
    return [];
  const problems = [];
  if (header.length > MAX_HEADER) problems.push(`the header is ${header.length} characters; at most ${MAX_HEADER}`);
  const m = headerRe.exec(header);
  if (!m) {
    problems.push("the header is not `scope: subject` (e.g. `machined: run udevd before the API`)");
  } else {
    const subject = m[2];
    const first = subject.split(/\s/)[0].toLowerCase();
    if ((/ed$|ing$/.test(first) && !notPastOrGerund.has(first)) || thirdPerson.has(first)) {
      problems.push(`the subject starts with "${first}": use the imperative ("fix", not "fixed", "fixing" or "fixes")`);
    }
    if (subject.endsWith(".")) problems.push("the subject ends with a period");
  }
  if (lines.length > 1 && lines[1].trim() !== "") problems.push("the second line is not blank");
  if (!lines.slice(2).some((l) => l.trim() !== "")) problems.push("there is no body: say why, and what was verified");
  return problems;
}

function git(args) {
  return execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

function checkSince(base) {
  try {
    git(["cat-file", "-e", `${base}^{commit}`]);
  } catch {
    console.error(`commit-msg: ${base} is not in this clone (a shallow clone? fetch its history)`);
    return 1;
  }
  const hashes = git(["rev-list", "--reverse", `${base}..HEAD`])
    .split("\n")
    .filter(Boolean);
  let failed = 0;
  for (const hash of hashes) {
    const problems = checkMessage(git(["log", "-1", "--format=%B", hash]));
    if (problems.length === 0) continue;
    failed++;
    const subject = git(["log", "-1", "--format=%s", hash]).trim();
    console.error(`${hash.slice(0, 12)} ${subject}\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
  console.log(`commit-msg: ${hashes.length} commits after ${base.slice(0, 12)} checked, ${failed} with problems`);
  return failed > 0 ? 1 : 0;
}

function main(argv) {
  if (argv[0] === "--since") return checkSince(argv[1] ?? FORM_SINCE);
  if (argv.length !== 1) {
    console.error("usage: commit-msg.mjs FILE | --since [REV]");
    return 2;
  }
  const problems = checkMessage(readFileSync(argv[0], "utf8"));
  if (problems.length === 0) return 0;
  console.error(`commit-msg: the message does not follow the form:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  return 1;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = main(process.argv.slice(2));
