// A small description language for config document shapes. One description drives
// decoding (unknown keys, wrong scalar kinds), value checks, strategic merge and the
// canonical re-encoding that talosctl writes after patching.

/** Value checks applied by validateConfig to typed fields. */
export type ValueCheck =
  | "url" // absolute URL with scheme and host
  | "cidr" // prefix "10.0.0.0/8"
  | "ip" // bare address
  | "ipOrCidr" // "10.0.0.1" or "10.0.0.1/24"
  | "subnetFilter" // CIDR optionally prefixed with "!" (exclusion)
  | "duration" // Go time.Duration text ("3m0s")
  | "hostPort" // "host:port"
  | "absPath"
  | "port" // 1..65535
  | { enum: readonly string[] };

export type Schema =
  | { t: "str"; check?: ValueCheck }
  | { t: "bool" }
  | { t: "int"; check?: ValueCheck }
  | { t: "list"; of: Schema; merge?: ListMerge }
  | { t: "map"; of: Schema }
  | { t: "obj"; fields: Record<string, Field>; struct?: boolean }
  | { t: "any" }; // free-form YAML kept as is (Kubernetes objects, extraConfig, ...)

/** How strategic merge combines two lists: append (default), replace, or merge items sharing a key. */
export type ListMerge = "replace" | { keyOf: (item: unknown) => string | undefined };

export interface Field {
  s: Schema;
  /** Emitted even when zero (Go field without omitempty). */
  always?: boolean;
  /** Strategic merge replaces instead of appending/merging. */
  replace?: boolean;
  /** Strategic merge combines the two URLs component by component (Go url.URL field merge). */
  urlMerge?: boolean;
  /** Leading blank characters are dropped on decode (inline manifest contents). */
  trimLeft?: boolean;
}

export const str = (check?: ValueCheck): Schema => (check ? { t: "str", check } : { t: "str" });
export const bool = (): Schema => ({ t: "bool" });
export const int = (check?: ValueCheck): Schema => (check ? { t: "int", check } : { t: "int" });
export const list = (of: Schema, merge?: ListMerge): Schema => (merge ? { t: "list", of, merge } : { t: "list", of });
export const map = (of: Schema): Schema => ({ t: "map", of });
export const any = (): Schema => ({ t: "any" });
export const enumOf = (...values: string[]): Schema => ({ t: "str", check: { enum: values } });

/** An object; entries are schemas or fields (`always(...)`, `replace(...)`). */
export function obj(fields: Record<string, Schema | Field>, opts: { struct?: boolean } = {}): Schema {
  const out: Record<string, Field> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = "s" in v ? v : { s: v };
  return opts.struct ? { t: "obj", fields: out, struct: true } : { t: "obj", fields: out };
}

export const always = (s: Schema | Field): Field => ("s" in s ? { ...s, always: true } : { s, always: true });
export const replaced = (s: Schema): Field => ({ s, replace: true });

/** Key of a list item by one string property (lists merged by name, vlanId, ...). */
export function keyedBy(prop: string): ListMerge {
  return {
    keyOf: (item) => {
      if (item === null || typeof item !== "object") return undefined;
      const v = (item as Record<string, unknown>)[prop];
      return v === undefined || v === null || v === "" ? undefined : String(v);
    },
  };
}
