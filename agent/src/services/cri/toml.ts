// The few TOML forms containerd's configuration files need: basic strings, booleans, string arrays.

/** A TOML basic string (JSON's escapes are TOML's for the characters a path or token holds). */
export function tomlString(s: string): string {
  return JSON.stringify(s);
}

export type TomlValue = string | boolean | string[] | string[][];

export function tomlValue(v: TomlValue): string {
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "string") return tomlString(v);
  return `[${v.map((x) => (Array.isArray(x) ? tomlValue(x) : tomlString(x))).join(", ")}]`;
}

/** `key = value` lines, indented, for the entries that are set. */
export function tomlEntries(entries: [string, TomlValue | undefined][], indent: string): string[] {
  return entries.flatMap(([k, v]) => (v === undefined ? [] : [`${indent}${k} = ${tomlValue(v)}`]));
}
