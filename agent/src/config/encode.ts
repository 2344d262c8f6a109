// Canonical encoding of documents, the way talosctl writes a config after patching:
// fields in schema order, fields Talos never omits written even when empty, empty
// optional fields dropped, map keys sorted, 4-space indentation.

import type { ConfigDocument } from "./document.js";
import { emitYaml } from "../resources/go-yaml-emit.js";
import { schemaOf } from "./schemas.js";
import type { Schema } from "./types/schema.js";

export function encodeValue(value: unknown, schema: Schema): unknown {
  if (value === undefined || value === null) return null;
  switch (schema.t) {
    case "obj": {
      if (typeof value !== "object" || Array.isArray(value)) return value;
      const src = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const [key, field] of Object.entries(schema.fields)) {
        const v = src[key];
        if (v === undefined || v === null) {
          if (field.always) out[key] = zeroOf(field.s);
          continue;
        }
        const enc = encodeValue(v, field.s);
        if (!field.always && isOmittable(enc, field.s)) continue;
        out[key] = enc;
      }
      return out;
    }
    case "list":
      return Array.isArray(value) ? value.map((item) => encodeValue(item, schema.of)) : value;
    case "map": {
      if (typeof value !== "object" || Array.isArray(value)) return value;
      const src = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(src).sort()) out[key] = encodeValue(src[key], schema.of);
      return out;
    }
    default:
      return value;
  }
}

/** What Go writes for a field without omitempty that holds nothing. */
function zeroOf(schema: Schema): unknown {
  switch (schema.t) {
    case "str":
      return "";
    case "int":
      return 0;
    case "bool":
      return false;
    case "list":
      return [];
    case "map":
    case "any":
      return {};
    case "obj":
      return schema.struct ? encodeValue({}, schema) : null;
  }
}

/** Go's omitempty: empty strings, zero numbers, empty lists and maps (pointers to structs stay). */
function isOmittable(v: unknown, schema: Schema): boolean {
  switch (schema.t) {
    case "str":
      return v === "";
    case "int":
      return v === 0;
    case "list":
      return Array.isArray(v) && v.length === 0;
    case "map":
      return typeof v === "object" && v !== null && Object.keys(v).length === 0;
    case "any":
      return typeof v === "object" && v !== null && Object.keys(v).length === 0;
    default:
      return false;
  }
}

export function encodeDocument(doc: ConfigDocument): unknown {
  return encodeValue(doc.value, schemaOf(doc.kind));
}

export function toYamlText(value: unknown): string {
  return emitYaml(value);
}

export function encodeDocuments(docs: readonly ConfigDocument[]): string {
  return docs.map((d) => toYamlText(encodeDocument(d))).join("---\n");
}
