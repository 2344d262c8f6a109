// Kubernetes configuration objects as Go writes them: the user's map decoded into a typed
// struct (unknown fields refused or dropped) and encoded again by encoding/json (zero values
// of fields without omitempty appear, nil pointers and slices as null, metav1.Duration as
// Go duration text), then as YAML by sigs.k8s.io/yaml (keys sorted, 2-space indent,
// sequences flush with their key). A Schema describes the Go type.
import { Document, Scalar, visit } from "yaml";
import { durationMs } from "../../config/checks.js";
import { InvalidInputError } from "../../errors.js";
import { goDuration } from "../../resources/go-duration.js";
import { isAmbiguousScalar } from "../../resources/go-yaml.js";

export type Schema =
  /** duration: metav1.Duration; raw: runtime.RawExtension (the value as given, null when absent). */
  | { t: "string" | "number" | "bool" | "duration" | "raw" }
  | { t: "ptr" | "slice"; of: Schema }
  | { t: "struct"; fields: Field[] }
  /** metav1.ObjectMeta: the given fields, and creationTimestamp null when unset. */
  | { t: "objectMeta" };

/** [json name, type, omitempty]. */
export type Field = [string, Schema, boolean?];

export const str: Schema = { t: "string" };
export const num: Schema = { t: "number" };
export const bool: Schema = { t: "bool" };
export const duration: Schema = { t: "duration" };
export const raw: Schema = { t: "raw" };
export const ptr = (of: Schema): Schema => ({ t: "ptr", of });
export const slice = (of: Schema): Schema => ({ t: "slice", of });
export const struct = (...fields: Field[]): Schema => ({ t: "struct", fields });

const zeroScalar = { string: "", number: 0, bool: false } as const;

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Whether encoding/json's omitempty leaves the field out (structs, and so durations and raw extensions, never are). */
function omitted(schema: Schema, v: unknown): boolean {
  if (v === undefined || v === null)
    return schema.t !== "struct" && schema.t !== "duration" && schema.t !== "objectMeta" && schema.t !== "raw";
  switch (schema.t) {
    case "string":
    case "number":
    case "bool":
      return v === zeroScalar[schema.t];
    case "slice":
      return Array.isArray(v) && v.length === 0;
    default:
      return false;
  }
}

function scalar(kind: "string" | "number" | "bool", v: unknown, at: string): unknown {
  const want = { string: "string", number: "number", bool: "boolean" }[kind];
  if (typeof v !== want) throw new InvalidInputError(`${at}: expected a ${kind}, got ${JSON.stringify(v)}`);
  return v;
}

export interface EncodeOptions {
  /** Refuse fields the Go type does not have (Talos decodes the audit policy strictly). */
  strict: boolean;
}

/** The value encoding/json writes for `v` decoded into the Go type `schema`. */
export function encodeGo(schema: Schema, v: unknown, opts: EncodeOptions, at = ""): unknown {
  const absent = v === undefined || v === null;
  switch (schema.t) {
    case "string":
    case "number":
    case "bool":
      return absent ? zeroScalar[schema.t] : scalar(schema.t, v, at);
    case "duration": {
      if (absent) return "0s";
      const ms = typeof v === "string" ? durationMs(v) : undefined;
      if (ms === undefined) throw new InvalidInputError(`${at}: invalid duration ${JSON.stringify(v)}`);
      return goDuration(ms);
    }
    case "raw":
      return absent ? null : v;
    case "ptr":
      return absent ? null : encodeGo(schema.of, v, opts, at);
    case "slice":
      if (absent) return null;
      if (!Array.isArray(v)) throw new InvalidInputError(`${at}: expected a list, got ${JSON.stringify(v)}`);
      return v.map((item, i) => encodeGo(schema.of, item, opts, `${at}[${i}]`));
    case "objectMeta":
      if (!absent && !isMap(v)) throw new InvalidInputError(`${at}: expected a map`);
      return { creationTimestamp: null, ...(absent ? {} : v) };
    case "struct": {
      if (!absent && !isMap(v)) throw new InvalidInputError(`${at}: expected a map, got ${JSON.stringify(v)}`);
      const given = absent ? {} : v;
      if (opts.strict) {
        const known = new Set(schema.fields.map(([name]) => name));
        for (const key of Object.keys(given))
          if (!known.has(key)) throw new InvalidInputError(`${at ? `${at}.` : ""}${key}: unknown field`);
      }
      const out: Record<string, unknown> = {};
      for (const [name, type, omitEmpty] of schema.fields) {
        const value = given[name];
        if (omitEmpty && omitted(type, value)) continue;
        out[name] = encodeGo(type, value, opts, at ? `${at}.${name}` : name);
      }
      return out;
    }
  }
}

/** YAML as sigs.k8s.io/yaml writes a JSON document. */
export function kubeYaml(value: unknown): string {
  const doc = new Document(value, { sortMapEntries: true, aliasDuplicateObjects: false });
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === "string" && isAmbiguousScalar(node.value)) node.type = Scalar.QUOTE_DOUBLE;
    },
  });
  return doc.toString({ indent: 2, indentSeq: false, lineWidth: 0, minContentWidth: 0, nullStr: "null" });
}
