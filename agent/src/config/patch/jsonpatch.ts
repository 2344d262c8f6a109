// RFC 6902 JSON patch over plain JSON-like data (add, remove, replace, move, copy, test).

import { isDeepStrictEqual } from "node:util";
import { InvalidInputError } from "../../errors.js";

export interface JsonPatchOp {
  op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  path: string;
  from?: string;
  value?: unknown;
}

const ops = new Set(["add", "remove", "replace", "move", "copy", "test"]);

/** Checks that `raw` is a list of well-formed operations. */
export function parseJsonPatch(raw: unknown): JsonPatchOp[] {
  if (!Array.isArray(raw)) throw new InvalidInputError("JSON patch must be a list of operations");
  return raw.map((item, i) => {
    if (typeof item !== "object" || item === null)
      throw new InvalidInputError(`JSON patch operation ${i}: not an object`);
    const o = item as Record<string, unknown>;
    if (typeof o.op !== "string" || !ops.has(o.op))
      throw new InvalidInputError(`JSON patch operation ${i}: unexpected kind of operation ${JSON.stringify(o.op)}`);
    if (typeof o.path !== "string") throw new InvalidInputError(`JSON patch operation ${i}: missing "path"`);
    if ((o.op === "move" || o.op === "copy") && typeof o.from !== "string")
      throw new InvalidInputError(`JSON patch operation ${i}: missing "from"`);
    if ((o.op === "add" || o.op === "replace" || o.op === "test") && !("value" in o))
      throw new InvalidInputError(`JSON patch operation ${i}: missing "value"`);
    return o as unknown as JsonPatchOp;
  });
}

function tokens(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new InvalidInputError(`invalid JSON pointer ${JSON.stringify(pointer)}`);
  return pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

type Container = Record<string, unknown> | unknown[];

function isContainer(v: unknown): v is Container {
  return typeof v === "object" && v !== null;
}

/** Parent container and last token of a pointer; throws when a step is missing. */
function locate(doc: unknown, pointer: string, op: string): { parent: Container; key: string } {
  const toks = tokens(pointer);
  if (toks.length === 0)
    throw new InvalidInputError(`${op} operation does not apply: the whole document cannot be targeted`);
  let cur: unknown = doc;
  for (const t of toks.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[arrayIndex(t, cur.length - 1, op, pointer)];
    else if (isContainer(cur)) cur = (cur as Record<string, unknown>)[t];
    else cur = undefined;
    if (!isContainer(cur))
      throw new InvalidInputError(`${op} operation does not apply: doc is missing path: "${pointer}"`);
  }
  if (!isContainer(cur))
    throw new InvalidInputError(`${op} operation does not apply: doc is missing path: "${pointer}"`);
  return { parent: cur, key: toks[toks.length - 1] };
}

function arrayIndex(tok: string, max: number, op: string, pointer: string): number {
  if (!/^(0|[1-9][0-9]*)$/.test(tok) || Number(tok) > max) {
    throw new InvalidInputError(`${op} operation does not apply: index out of bounds in path: "${pointer}"`);
  }
  return Number(tok);
}

function get(doc: unknown, pointer: string, op: string): unknown {
  if (pointer === "") return doc;
  const { parent, key } = locate(doc, pointer, op);
  if (Array.isArray(parent)) return parent[arrayIndex(key, parent.length - 1, op, pointer)];
  if (!(key in parent)) throw new InvalidInputError(`${op} operation does not apply: doc is missing key: "${pointer}"`);
  return parent[key];
}

function add(doc: unknown, pointer: string, value: unknown, op = "add"): void {
  const { parent, key } = locate(doc, pointer, op);
  if (Array.isArray(parent)) {
    const idx = key === "-" ? parent.length : arrayIndex(key, parent.length, op, pointer);
    parent.splice(idx, 0, value);
  } else parent[key] = value;
}

function remove(doc: unknown, pointer: string, op = "remove"): unknown {
  const { parent, key } = locate(doc, pointer, op);
  if (Array.isArray(parent)) return parent.splice(arrayIndex(key, parent.length - 1, op, pointer), 1)[0];
  if (!(key in parent)) throw new InvalidInputError(`${op} operation does not apply: doc is missing key: "${pointer}"`);
  const old = parent[key];
  delete parent[key];
  return old;
}

/** Applies the operations to a deep copy of `doc` and returns it. */
export function applyJsonPatch(doc: unknown, patch: readonly JsonPatchOp[]): unknown {
  const out = structuredClone(doc);
  for (const o of patch) {
    switch (o.op) {
      case "add":
        add(out, o.path, structuredClone(o.value));
        break;
      case "remove":
        remove(out, o.path);
        break;
      case "replace": {
        const { parent, key } = locate(out, o.path, "replace");
        if (Array.isArray(parent))
          parent[arrayIndex(key, parent.length - 1, "replace", o.path)] = structuredClone(o.value);
        else {
          if (!(key in parent))
            throw new InvalidInputError(`replace operation does not apply: doc is missing key: "${o.path}"`);
          parent[key] = structuredClone(o.value);
        }
        break;
      }
      case "move": {
        if (o.path.startsWith(o.from! + "/"))
          throw new InvalidInputError(`move operation does not apply: "${o.from}" is a prefix of "${o.path}"`);
        const v = remove(out, o.from!, "move");
        add(out, o.path, v, "move");
        break;
      }
      case "copy":
        add(out, o.path, structuredClone(get(out, o.from!, "copy")), "copy");
        break;
      case "test":
        if (!isDeepStrictEqual(get(out, o.path, "test"), o.value)) {
          throw new InvalidInputError(`testing value "${o.path}" failed: test failed`);
        }
        break;
    }
  }
  return out;
}
