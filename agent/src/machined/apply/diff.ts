// The config diff ApplyConfiguration shows (dry run, and the immediate-mode refusal).
// Talos prints Go's cmp.Diff of its structs; we print a unified diff of the canonical
// YAML encoding of the same document, with each hunk headed by the YAML path of its
// first change (as git heads a hunk with its enclosing function).

const context = 3;

type Op = { kind: " " | "-" | "+"; line: string; oldNo: number; newNo: number };

/** Line operations turning `a` into `b` (longest common subsequence). */
function lineOps(a: string[], b: string[]): Op[] {
  const lcs = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  }
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) ops.push({ kind: " ", line: a[i]!, oldNo: i++, newNo: j++ });
    else if (i < a.length && (j >= b.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!))
      ops.push({ kind: "-", line: a[i]!, oldNo: i++, newNo: j });
    else ops.push({ kind: "+", line: b[j]!, oldNo: i, newNo: j++ });
  }
  return ops;
}

const keyLine = /^(\s*)((?:- )*)([^\s#:][^:#]*?):(?:\s|$)/;

/** The dotted YAML path of line `at` (its key, under the keys that enclose it). */
export function yamlPathAt(lines: readonly string[], at: number): string {
  const path: string[] = [];
  let indent = Infinity;
  for (let k = at; k >= 0; k--) {
    const line = lines[k]!;
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
    const m = keyLine.exec(line);
    // A list item's keys sit at the dash's column plus the dashes.
    const lead = m ? m[1]!.length + m[2]!.length : line.length - line.trimStart().length;
    if (lead >= indent) continue;
    indent = lead;
    if (m) path.unshift(m[3]!.trim());
    if (lead === 0) break;
  }
  return path.join(".");
}

/** A unified diff of two YAML texts; "No changes." when they are equal. */
export function configDiff(before: string, after: string): string {
  if (before === after) return "No changes.";
  const a = before === "" ? [] : before.replace(/\n$/, "").split("\n");
  const b = after === "" ? [] : after.replace(/\n$/, "").split("\n");
  const ops = lineOps(a, b);
  const changed = ops.map((o, k) => (o.kind !== " " ? k : -1)).filter((k) => k >= 0);
  // Hunks: changes closer than twice the context share one hunk.
  const hunks: Array<[number, number]> = [];
  for (const k of changed) {
    const last = hunks.at(-1);
    if (last && k - last[1] <= 2 * context) last[1] = k;
    else hunks.push([k, k]);
  }
  const out = ["--- a", "+++ b"];
  for (const [first, last] of hunks) {
    const from = Math.max(0, first - context);
    const to = Math.min(ops.length - 1, last + context);
    const slice = ops.slice(from, to + 1);
    const oldCount = slice.filter((o) => o.kind !== "+").length;
    const newCount = slice.filter((o) => o.kind !== "-").length;
    const start = ops[from]!;
    const firstChange = ops[first]!;
    const section = firstChange.kind === "-" ? yamlPathAt(a, firstChange.oldNo) : yamlPathAt(b, firstChange.newNo);
    // Unified diff numbers an empty range by the line before it.
    const range = (no: number, count: number) => `${count === 0 ? no : no + 1},${count}`;
    out.push(`@@ -${range(start.oldNo, oldCount)} +${range(start.newNo, newCount)} @@${section ? ` ${section}` : ""}`);
    for (const o of slice) out.push(`${o.kind}${o.line}`);
  }
  return out.join("\n");
}
