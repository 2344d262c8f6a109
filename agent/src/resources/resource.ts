// The resource model: a typed spec plus COSI-style metadata, and the value
// functions (deep copy, deep equality) the store uses so callers never share
// mutable state with it.

export type Phase = "running" | "tearingDown";

export interface ResourceMetadata {
  namespace: string;
  type: string;
  id: string;
  /** Starts at 1 and increments on every stored change. 0 marks a tombstone (wire: "undefined"). */
  version: number;
  /** Name of the controller that owns the resource, or "". */
  owner: string;
  phase: Phase;
  created: Date;
  updated: Date;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  finalizers: string[];
}

export interface Resource<S = unknown> {
  metadata: ResourceMetadata;
  spec: S;
}

/** Identifies one resource. */
export interface ResourcePointer {
  namespace: string;
  type: string;
  id: string;
}

/** Identifies a kind (all resources of one type in one namespace). */
export interface KindPointer {
  namespace: string;
  type: string;
}

export interface NewResourceOptions {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Builds a fresh resource (version/owner/timestamps are set by the store on create). */
export function newResource<S>(
  namespace: string,
  type: string,
  id: string,
  spec: S,
  opts: NewResourceOptions = {},
): Resource<S> {
  const now = new Date();
  return {
    metadata: {
      namespace,
      type,
      id,
      version: 1,
      owner: "",
      phase: "running",
      created: now,
      updated: now,
      labels: { ...(opts.labels ?? {}) },
      annotations: { ...(opts.annotations ?? {}) },
      finalizers: [],
    },
    spec,
  };
}

/**
 * The placeholder COSI sends for "nothing here" (single watch of a missing id) and for
 * the bootstrapped marker: metadata only, version 0 ("undefined" on the wire), no spec.
 */
export function tombstone(namespace: string, type: string, id = ""): Resource<undefined> {
  const epoch = new Date(0);
  return {
    metadata: {
      namespace,
      type,
      id,
      version: 0,
      owner: "",
      phase: "running",
      created: epoch,
      updated: epoch,
      labels: {},
      annotations: {},
      finalizers: [],
    },
    spec: undefined,
  };
}

export function isTombstone(res: Resource<unknown>): boolean {
  return res.metadata.version === 0;
}

export function resourceKey(p: ResourcePointer): string {
  return `${p.namespace}\u0000${p.type}\u0000${p.id}`;
}

export function kindKey(p: KindPointer): string {
  return `${p.namespace}\u0000${p.type}`;
}

/** Deep copy of plain data: objects, arrays, Dates, Buffers/Uint8Arrays and primitives. */
export function cloneValue<T>(value: T): T {
  return cloneAny(value) as T;
}

function cloneAny(v: unknown): unknown {
  if (v === null || typeof v !== "object") return v;
  if (v instanceof Date) return new Date(v.getTime());
  if (Buffer.isBuffer(v)) return Buffer.from(v);
  if (v instanceof Uint8Array) return new Uint8Array(v);
  if (Array.isArray(v)) return v.map(cloneAny);
  if (v instanceof Map) return new Map([...v].map(([k, x]) => [cloneAny(k), cloneAny(x)]));
  // Instances of classes (e.g. the parsed ConfigBundle) are immutable values: shared, not copied, so their methods stay.
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = cloneAny(x);
  return out;
}

export function cloneResource<S>(res: Resource<S>): Resource<S> {
  return cloneValue(res);
}

/** Structural equality for the same kinds of values `cloneValue` handles. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") {
    return Number.isNaN(a) && Number.isNaN(b);
  }
  if (a instanceof Date || b instanceof Date) {
    return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  }
  if (a instanceof Uint8Array || b instanceof Uint8Array) {
    return a instanceof Uint8Array && b instanceof Uint8Array && Buffer.compare(a, b) === 0;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (a instanceof Map || b instanceof Map) {
    if (!(a instanceof Map && b instanceof Map) || a.size !== b.size) return false;
    for (const [k, x] of a) if (!b.has(k) || !deepEqual(x, b.get(k))) return false;
    return true;
  }
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
