// JSON bytes as Go's encoding/json Marshal writes a map[string]interface{} (Go 1.22): map
// keys sorted, no whitespace, and <, >, &, U+2028 and U+2029 escaped as \u00XX/\u20XX.
// Files Talos writes this way must come out byte for byte the same.

import { InvalidInputError } from "../errors.js";

const shortEscapes: Readonly<Record<string, string>> = {
  '"': '\\"',
  "\\": "\\\\",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
  "\b": "\\b",
  "\f": "\\f",
};

function goJsonString(s: string): string {
  const escaped = s.replace(/[\u0000-\u001f"\\<>&\u2028\u2029]/g, (c) => {
    return shortEscapes[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
  });
  return `"${escaped}"`;
}

const byKey = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);

/** A copy of `value` with every object's keys in sorted order (Go's maps marshal sorted). */
export function sortKeysDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeysDeep);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .sort(byKey)
        .map(([k, v]) => [k, sortKeysDeep(v)]),
    );
  }
  return value;
}

export function marshalGoJson(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string") return goJsonString(value);
  if (typeof value === "boolean") return String(value);
  if (typeof value === "number") {
    // Go refuses these; JavaScript and Go agree on the text of every finite float64.
    if (!Number.isFinite(value)) throw new InvalidInputError(`json: unsupported value: ${value}`);
    return String(value);
  }
  if (Array.isArray(value)) return `[${value.map(marshalGoJson).join(",")}]`;
  if (typeof value === "object") {
    return `{${Object.entries(value)
      .sort(byKey)
      .map(([k, v]) => `${goJsonString(k)}:${marshalGoJson(v)}`)
      .join(",")}}`;
  }
  throw new InvalidInputError(`json: unsupported type: ${typeof value}`);
}
