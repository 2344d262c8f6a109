// Typed reads of a metadata document's fields: absent is the zero value (as Go's JSON decoding
// leaves it), a value of the wrong type is MetadataError naming the field.

import { MetadataError } from "./metadata-http.js";

export type JsonObject = Record<string, unknown>;

function wrong(what: string, key: string, want: string, v: unknown): MetadataError {
  return new MetadataError(`${what}: ${key} is not ${want}: ${JSON.stringify(v)}`, { field: key });
}

export function asObject(v: unknown, what: string): JsonObject {
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new MetadataError(`${what}: not a JSON object`, { what });
  // Checked above: a non-null, non-array object, which is what JSON.parse makes of `{...}`.
  return v as JsonObject;
}

export function asArray(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) throw new MetadataError(`${what}: not a JSON array`, { what });
  return v;
}

export function str(o: JsonObject, key: string, what: string): string {
  const v = o[key];
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw wrong(what, key, "a string", v);
  return v;
}

export function num(o: JsonObject, key: string, what: string): number {
  const v = o[key];
  if (v === undefined || v === null) return 0;
  if (typeof v !== "number") throw wrong(what, key, "a number", v);
  return v;
}

export function bool(o: JsonObject, key: string, what: string): boolean {
  const v = o[key];
  if (v === undefined || v === null) return false;
  if (typeof v !== "boolean") throw wrong(what, key, "a boolean", v);
  return v;
}

export function arr(o: JsonObject, key: string, what: string): unknown[] {
  const v = o[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw wrong(what, key, "an array", v);
  return v;
}

export function obj(o: JsonObject, key: string, what: string): JsonObject {
  const v = o[key];
  if (v === undefined || v === null) return {};
  return asObject(v, `${what}: ${key}`);
}

export function strings(o: JsonObject, key: string, what: string): string[] {
  return arr(o, key, what).map((v) => {
    if (typeof v !== "string") throw wrong(what, key, "a list of strings", v);
    return v;
  });
}
