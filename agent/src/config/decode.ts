// Walks one parsed YAML document against its schema: builds the plain value (with
// Go-like scalar coercions) and collects unknown keys and wrong value kinds with
// their field paths and source lines.

import {
  isAlias,
  isMap,
  isScalar,
  isSeq,
  type Document,
  type LineCounter,
  type Node,
  type Pair,
  type Scalar,
} from "yaml";
import type { Schema } from "./types/schema.js";

export interface DecodeProblem {
  path: string;
  line?: number;
  message: string;
}

export interface DecodeResult {
  value: unknown;
  unknownKeys: { path: string; line?: number }[];
  problems: DecodeProblem[];
}

export interface DecodeOptions {
  lineCounter?: LineCounter;
  /** Strategic-merge patches may carry `$patch: delete` directives. */
  allowPatchDirectives?: boolean;
  /** The document the nodes belong to (resolves aliases and `<<` merge keys). */
  doc?: Document;
}

const boolWords: Record<string, boolean> = { true: true, false: false, yes: true, no: false, on: true, off: false };

export function childPath(path: string, key: string): string {
  return /^[A-Za-z0-9_$-]+$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

export function decodeNode(
  node: Node | null | undefined,
  schema: Schema,
  opts: DecodeOptions = {},
  path = "",
): DecodeResult {
  const result: DecodeResult = { value: undefined, unknownKeys: [], problems: [] };
  result.value = walk(node ?? null, schema, path, opts, result);
  return result;
}

function lineOf(node: Node | null, opts: DecodeOptions): number | undefined {
  const offset = node?.range?.[0];
  if (offset === undefined || !opts.lineCounter) return undefined;
  return opts.lineCounter.linePos(offset).line;
}

function yamlTag(node: Node): string {
  if (isMap(node)) return "!!map";
  if (isSeq(node)) return "!!seq";
  const v = (node as Scalar).value;
  if (v === null) return "!!null";
  if (typeof v === "boolean") return "!!bool";
  if (typeof v === "number") return Number.isInteger(v) ? "!!int" : "!!float";
  return "!!str";
}

function mismatch(node: Node, want: string, path: string, opts: DecodeOptions, out: DecodeResult): undefined {
  const shown = isScalar(node) ? ` ${JSON.stringify(String((node as Scalar).value))}` : "";
  out.problems.push({
    path,
    line: lineOf(node, opts),
    message: `cannot unmarshal ${yamlTag(node)}${shown} into ${want}`,
  });
  return undefined;
}

function resolveAlias(node: Node | null, opts: DecodeOptions): Node | null {
  if (node && isAlias(node)) return opts.doc ? ((node.resolve(opts.doc) as Node | undefined) ?? null) : null;
  return node;
}

const isMergeKey = (p: Pair): boolean => {
  if (!isScalar(p.key)) return false;
  const k = p.key as Scalar;
  return k.value === "<<" || typeof k.value === "symbol" || k.source === "<<";
};

/** Pairs of a mapping with `<<` merge keys expanded (explicit keys win, like go-yaml). */
function mappingPairs(node: Node, opts: DecodeOptions): Pair[] {
  if (!isMap(node)) return [];
  const own = node.items.filter((p) => !isMergeKey(p));
  const merged: Pair[] = [];
  for (const p of node.items) {
    if (!isMergeKey(p)) continue;
    const v = resolveAlias(p.value as Node | null, opts);
    const sources = v && isSeq(v) ? v.items.map((i) => resolveAlias(i as Node, opts)) : [v];
    for (const src of sources) if (src) merged.push(...mappingPairs(src, opts));
  }
  const keyOf = (p: Pair) => String(isScalar(p.key) ? (p.key as Scalar).value : p.key);
  const ownKeys = new Set(own.map(keyOf));
  const seen = new Set<string>();
  const extra = merged.filter((p) => {
    const k = keyOf(p);
    if (ownKeys.has(k) || seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  return [...own, ...extra];
}

function walk(rawNode: Node | null, schema: Schema, path: string, opts: DecodeOptions, out: DecodeResult): unknown {
  const node = resolveAlias(rawNode, opts);
  if (node === null || (isScalar(node) && (node as Scalar).value === null)) return null;
  // `{$patch: delete}` may stand in for a value of any kind in a strategic patch.
  if (opts.allowPatchDirectives && schema.t !== "obj" && isMap(node) && node.has("$patch")) {
    return node.toJSON() as unknown;
  }
  switch (schema.t) {
    case "any":
      return opts.doc ? node.toJS(opts.doc) : node.toJSON();
    case "str": {
      if (!isScalar(node)) return mismatch(node, "string", path, opts, out);
      const v = (node as Scalar).value;
      // Go decodes any scalar into a string field as its source text.
      return typeof v === "string" ? v : ((node as Scalar).source ?? String(v));
    }
    case "bool": {
      if (!isScalar(node)) return mismatch(node, "bool", path, opts, out);
      const v = (node as Scalar).value;
      if (typeof v === "boolean") return v;
      // go-yaml still reads YAML 1.1 words (yes/no/on/off) as booleans, but only unquoted.
      const plain = (node as Scalar).type === "PLAIN";
      if (plain && typeof v === "string" && v.toLowerCase() in boolWords) return boolWords[v.toLowerCase()];
      return mismatch(node, "bool", path, opts, out);
    }
    case "int": {
      if (!isScalar(node)) return mismatch(node, "int", path, opts, out);
      const v = (node as Scalar).value;
      const src = (node as Scalar).source;
      // YAML 1.1 octal (0644) as go-yaml reads it, for file permissions.
      if (typeof src === "string" && /^0[0-7]+$/.test(src)) return parseInt(src, 8);
      if (typeof v === "number" && Number.isInteger(v)) return v;
      return mismatch(node, "int", path, opts, out);
    }
    case "list": {
      if (!isSeq(node)) return mismatch(node, "list", path, opts, out);
      return node.items.map((item, i) => walk(item as Node | null, schema.of, `${path}[${i}]`, opts, out));
    }
    case "map": {
      if (!isMap(node)) return mismatch(node, "map", path, opts, out);
      const res: Record<string, unknown> = {};
      for (const pair of mappingPairs(node, opts)) {
        const key = String(isScalar(pair.key) ? (pair.key as Scalar).value : pair.key);
        res[key] = walk(pair.value as Node | null, schema.of, childPath(path, key), opts, out);
      }
      return res;
    }
    case "obj": {
      if (!isMap(node)) return mismatch(node, "object", path, opts, out);
      const res: Record<string, unknown> = {};
      for (const pair of mappingPairs(node, opts)) {
        const key = String(isScalar(pair.key) ? (pair.key as Scalar).value : pair.key);
        const field = schema.fields[key];
        const keyPath = childPath(path, key);
        if (key === "$patch" && opts.allowPatchDirectives) {
          res[key] = isScalar(pair.value) ? (pair.value as Scalar).value : null;
          continue;
        }
        if (!field) {
          out.unknownKeys.push({ path: keyPath, line: lineOf(pair.key as Node, opts) });
          continue;
        }
        let v = walk(pair.value as Node | null, field.s, keyPath, opts, out);
        // Talos drops leading blank lines of inline manifests (a YAML stream may not start with them).
        if (field.trimLeft && typeof v === "string") v = v.replace(/^[\t\n\v\f\r]+/, "");
        res[key] = v;
      }
      return res;
    }
  }
}
