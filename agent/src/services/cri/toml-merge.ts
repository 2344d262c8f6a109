// Talos's merge of the CRI configuration parts (internal/pkg/toml Merge over machinery's
// config/merge): each TOML document decoded and merged into the ones before it in order, tables
// key by key, arrays appended, a non-empty string or a non-zero number replacing, a boolean always
// replacing; a key whose value changes kind is an error. The result is re-encoded under a
// `## <part>` line for each part.
import { parse, stringify, TomlDate } from "smol-toml";
import { BasaltError, describeError } from "../../errors.js";

/** A part could not be decoded or merged. */
export class TomlMergeError extends BasaltError {}

type Table = Record<string, unknown>;

function kindOf(v: unknown): string {
  if (Array.isArray(v)) return "array";
  if (v instanceof TomlDate) return "datetime";
  if (typeof v === "object" && v !== null) return "table";
  return typeof v;
}

/** Whether `right` leaves `left`'s value alone (Go's zero values, which merge.Merge skips). */
function keepsLeft(right: unknown): boolean {
  return (
    right === "" ||
    right === 0 ||
    (Array.isArray(right) && right.length === 0) ||
    (kindOf(right) === "table" && Object.keys(right as Table).length === 0)
  );
}

function mergeInto(left: Table, right: Table, at: string): void {
  for (const [key, r] of Object.entries(right)) {
    const where = at ? `${at}.${key}` : key;
    if (!(key in left)) {
      left[key] = r;
      continue;
    }
    const l = left[key];
    if (kindOf(l) !== kindOf(r))
      throw new TomlMergeError(`merge type mismatch at ${where}: ${kindOf(l)} and ${kindOf(r)}`, { key: where });
    if (keepsLeft(r)) continue;
    if (kindOf(r) === "table") mergeInto(l as Table, r as Table, where);
    else if (Array.isArray(r)) left[key] = [...(l as unknown[]), ...r];
    else left[key] = r;
  }
}

export interface TomlPart {
  /** Named in the merged file's header. */
  name: string;
  text: string;
}

/** The parts merged in order (Talos's toml.Merge); `base` is merged first and left out of the header. */
export function mergeTomlParts(base: string, parts: readonly TomlPart[]): string {
  const merged: Table = {};
  const decode = (text: string, name: string): Table => {
    try {
      return parse(text) as Table;
    } catch (err) {
      throw new TomlMergeError(
        `error decoding ${JSON.stringify(name)}: ${describeError(err)}`,
        { part: name },
        { cause: err },
      );
    }
  };
  mergeInto(merged, decode(base, "generated"), "");
  for (const part of parts) {
    try {
      mergeInto(merged, decode(part.text, part.name), "");
    } catch (err) {
      if (err instanceof TomlMergeError && err.fields.part) throw err;
      throw new TomlMergeError(
        `error merging ${JSON.stringify(part.name)}: ${describeError(err)}`,
        { part: part.name },
        { cause: err },
      );
    }
  }
  const header = parts.map((p) => `## ${p.name}\n`).join("");
  return `${header}${header ? "\n" : ""}${stringify(merged)}\n`;
}
