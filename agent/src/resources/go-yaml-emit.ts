// A YAML emitter that lays out block collections the way go-yaml v3 does with a
// 4-space indent (what talosctl writes): nested blocks 4 deeper than their key,
// sequences 4 deeper than their key, and inside a sequence item the item's keys sit
// after "- " while their nested blocks sit 4 deeper than the dash.

import { stringify } from "yaml";

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const pad = (n: number) => " ".repeat(n);

/** One scalar on one line, quoted only when YAML needs it. */
function scalar(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "boolean" || typeof v === "number") return String(v);
  const text = stringify(v, { lineWidth: 0 }).replace(/\n$/, "");
  // Never let a scalar spill over lines here: JSON's escapes are valid YAML double-quoted escapes.
  return text.includes("\n") ? JSON.stringify(v) : text;
}

/** A multi-line string as a literal block when that round-trips, else undefined. */
function literal(v: string, contentIndent: number): string | undefined {
  if (!v.includes("\n")) return undefined;
  if (/^[ \t\n]/.test(v) || /[ \t]\n/.test(v) || /[\r\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufeff]/.test(v))
    return undefined;
  const body = v.replace(/\n+$/, "");
  const trailing = v.length - body.length;
  const chomp = trailing === 0 ? "-" : trailing === 1 ? "" : "+";
  const lines = (trailing > 1 ? v.slice(0, -1) : body).split("\n");
  return `|${chomp}\n` + lines.map((l) => (l === "" ? "" : pad(contentIndent) + l)).join("\n");
}

function isEmptyCollection(v: unknown): string | undefined {
  if (Array.isArray(v) && v.length === 0) return "[]";
  if (isObj(v) && Object.keys(v).length === 0) return "{}";
  return undefined;
}

/** Renders `key: value` lines of a mapping whose keys start at `keyIndent`; nested blocks start at `childIndent`. */
function mapping(
  obj: Obj,
  keyIndent: number,
  childIndent: number,
  firstPrefix: string | undefined,
  out: string[],
): void {
  let first = true;
  for (const [key, value] of Object.entries(obj)) {
    const lead = first && firstPrefix !== undefined ? firstPrefix : pad(keyIndent);
    first = false;
    const k = scalar(key);
    const empty = isEmptyCollection(value);
    if (empty) out.push(`${lead}${k}: ${empty}`);
    else if (isObj(value)) {
      out.push(`${lead}${k}:`);
      mapping(value, childIndent, childIndent + 4, undefined, out);
    } else if (Array.isArray(value)) {
      out.push(`${lead}${k}:`);
      sequence(value, childIndent, out);
    } else if (typeof value === "string" && literal(value, childIndent) !== undefined) {
      out.push(`${lead}${k}: ${literal(value, childIndent)}`);
    } else out.push(`${lead}${k}: ${scalar(value)}`);
  }
}

function sequence(items: unknown[], dashIndent: number, out: string[]): void {
  for (const item of items) {
    const dash = `${pad(dashIndent)}- `;
    const empty = isEmptyCollection(item);
    if (empty) out.push(`${dash}${empty}`);
    else if (isObj(item)) mapping(item, dashIndent + 2, dashIndent + 4, dash, out);
    else if (Array.isArray(item)) {
      out.push(`${pad(dashIndent)}-`);
      sequence(item, dashIndent + 4, out);
    } else if (typeof item === "string" && literal(item, dashIndent + 4) !== undefined) {
      out.push(`${dash}${literal(item, dashIndent + 4)}`);
    } else out.push(`${dash}${scalar(item)}`);
  }
}

/** One YAML document for a plain value (a mapping at the top, as config documents are). */
export function emitYaml(value: unknown): string {
  const empty = isEmptyCollection(value);
  if (empty) return empty + "\n";
  const out: string[] = [];
  if (isObj(value)) mapping(value, 0, 4, undefined, out);
  else if (Array.isArray(value)) sequence(value, 0, out);
  else out.push(scalar(value));
  return out.join("\n") + "\n";
}
