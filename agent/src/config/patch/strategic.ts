// Strategic merge of config documents as talosctl v1.7 does it: the patch is laid
// over the config field by field following the document schema. Scalars replace
// unless the patch holds a zero value ("" or 0; false does replace), lists append
// unless Talos merges them by key (interfaces by name or selector, vlans by id,
// admission plugins by name) or replaces them (pod/service subnets, audit policy),
// maps merge key by key, free-form YAML merges deeply, and `$patch: delete` removes
// the thing it sits in.

import { InvalidInputError } from "../../errors.js";
import { V1ALPHA1, type ConfigDocument } from "../document.js";
import { schemaOf } from "../schemas.js";
import type { Field, Schema } from "../types/schema.js";

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const isDelete = (v: unknown): boolean => isObj(v) && v.$patch === "delete";
const clone = <T>(v: T): T => structuredClone(v);

interface Ctx {
  docId: string;
}

function deleteFailed(ctx: Ctx, path: string): never {
  throw new InvalidInputError(
    `patch delete: path '${path}' in document '${ctx.docId}': failed to delete path '${path}': lookup failed`,
  );
}

const join = (path: string, key: string): string => (path ? `${path}.${key}` : key);

/** Merges `right` into a copy of `left` following `schema`. */
export function mergeValue(left: unknown, right: unknown, schema: Schema, ctx: Ctx, path = ""): unknown {
  if (right === undefined || right === null) return left;
  switch (schema.t) {
    case "obj":
      return mergeObject(left, right, schema.fields, ctx, path);
    case "map":
      return mergeMap(left, right, schema.of, ctx, path);
    case "list":
      return mergeList(left, right, schema, ctx, path);
    case "any":
      return mergeFree(left, right, path);
    case "bool":
      return right;
    case "str":
    case "int":
      return right === "" || right === 0 ? left : right;
  }
}

function mergeObject(left: unknown, right: unknown, fields: Record<string, Field>, ctx: Ctx, path: string): unknown {
  if (!isObj(right)) return right;
  const out: Obj = isObj(left) ? clone(left) : {};
  for (const [key, rv] of Object.entries(right)) {
    if (key === "$patch") continue;
    const keyPath = join(path, key);
    if (isDelete(rv)) {
      if (out[key] === undefined) deleteFailed(ctx, keyPath);
      delete out[key];
      continue;
    }
    const field = fields[key];
    if (!field) continue; // decoding already rejected unknown keys
    if (field.replace) {
      if (rv !== null && rv !== undefined && !(Array.isArray(rv) && rv.length === 0)) out[key] = clone(rv);
      continue;
    }
    if (field.urlMerge && typeof rv === "string") {
      out[key] = typeof out[key] === "string" ? mergeUrl(out[key] as string, rv) : rv;
      continue;
    }
    const merged = mergeValue(out[key], rv, field.s, ctx, keyPath);
    if (merged !== undefined) out[key] = merged;
  }
  return out;
}

function mergeMap(left: unknown, right: unknown, of: Schema, ctx: Ctx, path: string): unknown {
  if (!isObj(right)) return right;
  const out: Obj = isObj(left) ? clone(left) : {};
  for (const [key, rv] of Object.entries(right)) {
    const keyPath = join(path, key);
    if (isDelete(rv)) {
      if (out[key] === undefined) deleteFailed(ctx, keyPath);
      delete out[key];
      continue;
    }
    out[key] = out[key] === undefined || out[key] === null ? clone(rv) : mergeValue(out[key], rv, of, ctx, keyPath);
  }
  return out;
}

function mergeList(
  left: unknown,
  right: unknown,
  schema: Extract<Schema, { t: "list" }>,
  ctx: Ctx,
  path: string,
): unknown {
  if (!Array.isArray(right)) return right;
  const base = Array.isArray(left) ? clone(left) : undefined;
  if (schema.merge === "replace") return right.length > 0 ? clone(right) : (base ?? []);
  if (!base) return right.filter((item) => !isDelete(item)).map(clone);
  const keyed = schema.merge;
  for (const item of right) {
    const key = keyed ? keyed.keyOf(item) : undefined;
    if (isDelete(item)) {
      const idx = key !== undefined && keyed ? base.findIndex((b) => keyed.keyOf(b) === key) : -1;
      if (idx < 0) deleteFailed(ctx, `${path}[${key ?? "?"}]`);
      base.splice(idx, 1);
      continue;
    }
    if (keyed && key !== undefined) {
      const idx = base.findIndex((b) => keyed.keyOf(b) === key);
      if (idx >= 0) {
        base[idx] = mergeValue(base[idx], item, schema.of, ctx, `${path}[${key}]`);
        continue;
      }
    }
    base.push(clone(item));
  }
  return base;
}

/** Free-form YAML: maps merge per key, lists append, non-zero scalars replace. */
function mergeFree(left: unknown, right: unknown, path: string): unknown {
  if (left === undefined || left === null) return clone(right);
  if (isObj(left) && isObj(right)) {
    const out = clone(left);
    for (const [key, rv] of Object.entries(right)) {
      if (rv === null || rv === undefined) continue;
      out[key] = out[key] === undefined || out[key] === null ? clone(rv) : mergeFree(out[key], rv, join(path, key));
    }
    return out;
  }
  if (Array.isArray(left) && Array.isArray(right)) return [...clone(left), ...clone(right)];
  const kind = (v: unknown) => (Array.isArray(v) ? "list" : typeof v);
  if (kind(left) !== kind(right)) {
    throw new InvalidInputError(`merge type mismatch at '${path}': left ${kind(left)} right ${kind(right)}`);
  }
  if (right === "" || right === 0) return left;
  return clone(right);
}

interface UrlParts {
  scheme: string;
  user: string;
  host: string;
  path: string;
  query: string;
  fragment: string;
}

function parseUrl(s: string): UrlParts | undefined {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(?:([^@/?#]*)@)?([^/?#]*)([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(s);
  if (!m) return undefined;
  return { scheme: m[1], user: m[2] ?? "", host: m[3], path: m[4], query: m[5] ?? "", fragment: m[6] ?? "" };
}

/** Go merges url.URL structs field by field: empty parts of the patch keep the original's. */
export function mergeUrl(left: string, right: string): string {
  const l = parseUrl(left);
  const r = parseUrl(right);
  if (!l || !r) return right;
  const pick = (k: keyof UrlParts) => (r[k] !== "" ? r[k] : l[k]);
  const user = pick("user");
  const query = pick("query");
  const fragment = pick("fragment");
  return `${pick("scheme")}://${user ? user + "@" : ""}${pick("host")}${pick("path")}${query ? "?" + query : ""}${fragment ? "#" + fragment : ""}`;
}

const documentId = (d: ConfigDocument): string =>
  d.kind === V1ALPHA1 ? "/v1alpha1" : `${d.apiVersion}/${d.kind}${d.name ? "/" + d.name : ""}`;

const sameDocument = (a: ConfigDocument, b: ConfigDocument): boolean =>
  a.kind === b.kind && (a.name ?? "") === (b.name ?? "");

/** Applies one strategic-merge patch (its documents) to a list of documents. */
export function strategicMerge(
  documents: readonly ConfigDocument[],
  patch: readonly ConfigDocument[],
): ConfigDocument[] {
  const out = documents.map((d) => ({ ...d, value: clone(d.value) }));
  for (const p of patch) {
    const idx = out.findIndex((d) => sameDocument(d, p));
    const ctx = { docId: documentId(p) };
    if (p.value.$patch === "delete") {
      if (idx < 0) throw new InvalidInputError(`patch delete: document '${ctx.docId}' not found`);
      out.splice(idx, 1);
      continue;
    }
    if (idx < 0) {
      out.push({ ...p, value: mergeValue({}, p.value, schemaOf(p.kind), ctx) as Obj });
      continue;
    }
    out[idx] = { ...out[idx], value: mergeValue(out[idx].value, p.value, schemaOf(p.kind), ctx) as Obj };
  }
  return out;
}
