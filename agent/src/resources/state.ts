// The in-memory resource store: typed resources keyed by namespace/type/id with
// COSI semantics (versions, owners, phases, finalizers) and watches that deliver
// bootstrap contents and tail events in one global order.

import {
  AlreadyExistsError,
  ConflictError,
  InvalidInputError,
  NotFoundError,
  PermissionDeniedError,
  describeError,
} from "../errors.js";
import { logger } from "../log.js";
import {
  type KindPointer,
  type Phase,
  type Resource,
  type ResourcePointer,
  cloneResource,
  cloneValue,
  deepEqual,
  kindKey,
  tombstone,
} from "./resource.js";

const log = logger("resources");

export type WatchEventType = "created" | "updated" | "destroyed" | "bootstrapped";

/**
 * One watch event. `old` is set on "updated" only. "bootstrapped" carries a tombstone
 * of the kind (id ""); a single-resource watch of a missing id starts with "destroyed"
 * carrying a tombstone of that id (see isTombstone).
 */
export interface WatchEvent<S = unknown> {
  type: WatchEventType;
  resource: Resource<S>;
  old?: Resource<S>;
}

export interface WatchTarget {
  namespace: string;
  type: string;
  /** Present: single-resource watch. Absent: kind watch. */
  id?: string;
}

export interface WatchOptions {
  /**
   * Kind watch only: first every existing resource as "created" (sorted by id), then a
   * "bootstrapped" marker, then live events. A single-resource watch always starts with
   * the current state ("created", or "destroyed" with a tombstone) unless tailEvents > 0.
   */
  bootstrap?: boolean;
  /** Replay up to this many buffered past events (of the kind, or of the id) before live ones. */
  tailEvents?: number;
  signal: AbortSignal;
}

export type WatchCallback<S = unknown> = (event: WatchEvent<S>) => void;

export interface WriteOptions {
  owner: string;
}

export interface UpdateOptions extends WriteOptions {
  /** Refuse (ConflictError) unless the stored version equals this. */
  expectedVersion?: number;
  /** Refuse (ConflictError) unless the stored phase equals this. Absent: any phase. */
  expectedPhase?: Phase;
}

export interface ModifyOptions {
  /** Replace labels (when given). */
  labels?: Record<string, string>;
  /** Replace annotations (when given). */
  annotations?: Record<string, string>;
}

export interface ResourceStateOptions {
  /** Clock for created/updated timestamps (tests). */
  now?: () => Date;
  /** Past events kept per kind for tail replays. */
  historyCapacity?: number;
}

interface StoredEvent {
  seq: number;
  kind: string;
  id: string;
  event: WatchEvent;
}

interface Watcher {
  kind: string;
  id: string | undefined;
  /** Events with seq <= since are already reflected in what this watcher was given. */
  since: number;
  signal: AbortSignal;
  callback: WatchCallback;
}

export class ResourceState {
  private readonly resources = new Map<string, Map<string, Resource>>();
  private readonly history = new Map<string, StoredEvent[]>();
  private readonly watchers = new Map<string, Set<Watcher>>();
  private readonly queue: StoredEvent[] = [];
  private dispatching = false;
  private seq = 0;
  private readonly now: () => Date;
  private readonly historyCapacity: number;

  constructor(opts: ResourceStateOptions = {}) {
    this.now = opts.now ?? (() => new Date());
    this.historyCapacity = opts.historyCapacity ?? 100;
  }

  /** A copy of the resource, or undefined when it does not exist. */
  get<S = unknown>(namespace: string, type: string, id: string): Resource<S> | undefined {
    const res = this.resources.get(kindKey({ namespace, type }))?.get(id);
    return res ? (cloneResource(res) as Resource<S>) : undefined;
  }

  /** Like get, but throws NotFoundError when missing. */
  mustGet<S = unknown>(namespace: string, type: string, id: string): Resource<S> {
    const res = this.get<S>(namespace, type, id);
    if (!res) throw notFound({ namespace, type, id });
    return res;
  }

  /** Copies of every resource of the kind, sorted by id. */
  list<S = unknown>(namespace: string, type: string): Resource<S>[] {
    const kind = this.resources.get(kindKey({ namespace, type }));
    if (!kind) return [];
    return [...kind.values()].sort(byId).map((r) => cloneResource(r) as Resource<S>);
  }

  /** Stores a new resource owned by `owner`: version 1, phase running, fresh timestamps. */
  create<S>(res: Resource<S>, opts: WriteOptions): Resource<S> {
    const { namespace, type, id } = res.metadata;
    const kind = this.kindMap(namespace, type);
    if (kind.has(id)) {
      throw new AlreadyExistsError(`resource ${describe(res.metadata)} already exists`, { namespace, type, id });
    }
    const now = this.now();
    const stored: Resource = {
      metadata: {
        namespace,
        type,
        id,
        version: 1,
        owner: opts.owner,
        phase: "running",
        created: now,
        updated: now,
        labels: cloneValue(res.metadata.labels ?? {}),
        annotations: cloneValue(res.metadata.annotations ?? {}),
        finalizers: [...(res.metadata.finalizers ?? [])],
      },
      spec: cloneValue(res.spec),
    };
    kind.set(id, stored);
    this.emit({ type: "created", resource: stored });
    return cloneResource(stored) as Resource<S>;
  }

  /**
   * Replaces spec, labels and annotations of an existing resource; bumps the version.
   * Phase and finalizers are kept (they change through teardown/addFinalizer/removeFinalizer).
   */
  update<S>(res: Resource<S>, opts: UpdateOptions): Resource<S> {
    const cur = this.mustExist(res.metadata);
    checkOwner(cur, opts.owner);
    if (opts.expectedVersion !== undefined && cur.metadata.version !== opts.expectedVersion) {
      throw new ConflictError(
        `resource ${describe(cur.metadata)} update conflict: expected version ${opts.expectedVersion}, actual ${cur.metadata.version}`,
        { ...pointerOf(cur), expected: opts.expectedVersion, actual: cur.metadata.version },
      );
    }
    if (opts.expectedPhase !== undefined && cur.metadata.phase !== opts.expectedPhase) {
      throw new ConflictError(
        `resource ${describe(cur.metadata)} is in phase ${cur.metadata.phase}, expected ${opts.expectedPhase}`,
        {
          ...pointerOf(cur),
          phase: cur.metadata.phase,
        },
      );
    }
    return this.replace(cur, {
      spec: cloneValue(res.spec),
      labels: cloneValue(res.metadata.labels ?? {}),
      annotations: cloneValue(res.metadata.annotations ?? {}),
    }) as Resource<S>;
  }

  /**
   * Creates or updates (owned by `owner`) with the spec `fn` returns; `fn` gets a copy of
   * the current spec or undefined. Writes nothing (no version bump, no event) when spec,
   * labels and annotations are unchanged. Refuses (ConflictError) a resource tearing down.
   */
  modify<S>(
    namespace: string,
    type: string,
    id: string,
    owner: string,
    fn: (current: S | undefined) => S,
    opts: ModifyOptions = {},
  ): Resource<S> {
    const cur = this.resources.get(kindKey({ namespace, type }))?.get(id);
    if (!cur) {
      const spec = fn(undefined);
      const now = this.now();
      return this.create<S>(
        {
          metadata: {
            namespace,
            type,
            id,
            version: 1,
            owner,
            phase: "running",
            created: now,
            updated: now,
            labels: opts.labels ?? {},
            annotations: opts.annotations ?? {},
            finalizers: [],
          },
          spec,
        },
        { owner },
      );
    }
    checkOwner(cur, owner);
    if (cur.metadata.phase !== "running") {
      throw new ConflictError(`resource ${describe(cur.metadata)} is tearing down`, {
        ...pointerOf(cur),
        phase: cur.metadata.phase,
      });
    }
    const spec = cloneValue(fn(cloneValue(cur.spec) as S));
    const labels = opts.labels ? cloneValue(opts.labels) : cur.metadata.labels;
    const annotations = opts.annotations ? cloneValue(opts.annotations) : cur.metadata.annotations;
    if (
      deepEqual(spec, cur.spec) &&
      deepEqual(labels, cur.metadata.labels) &&
      deepEqual(annotations, cur.metadata.annotations)
    ) {
      return cloneResource(cur) as Resource<S>;
    }
    return this.replace(cur, { spec, labels: cloneValue(labels), annotations: cloneValue(annotations) }) as Resource<S>;
  }

  /**
   * Moves the resource to phase tearingDown (once; bumps the version). Returns true when
   * it has no finalizers left, i.e. it may be destroyed now.
   */
  teardown(namespace: string, type: string, id: string, opts: WriteOptions): boolean {
    const cur = this.mustExist({ namespace, type, id });
    checkOwner(cur, opts.owner);
    if (cur.metadata.phase !== "tearingDown") this.replace(cur, { phase: "tearingDown" });
    return cur.metadata.finalizers.length === 0;
  }

  /** Removes the resource. Refused (ConflictError) while it has finalizers. */
  destroy(namespace: string, type: string, id: string, opts: WriteOptions): void {
    const cur = this.mustExist({ namespace, type, id });
    checkOwner(cur, opts.owner);
    if (cur.metadata.finalizers.length > 0) {
      throw new ConflictError(
        `resource ${describe(cur.metadata)} has pending finalizers ${cur.metadata.finalizers.join(", ")}`,
        {
          ...pointerOf(cur),
          finalizers: [...cur.metadata.finalizers],
        },
      );
    }
    this.resources.get(kindKey(cur.metadata))?.delete(id);
    this.emit({ type: "destroyed", resource: cur });
  }

  /** Adds finalizers (anyone may; no owner check). No-op when all are present. */
  addFinalizer(namespace: string, type: string, id: string, ...finalizers: string[]): void {
    const cur = this.mustExist({ namespace, type, id });
    const next = [...cur.metadata.finalizers];
    for (const f of finalizers) if (!next.includes(f)) next.push(f);
    if (next.length !== cur.metadata.finalizers.length) this.replace(cur, { finalizers: next });
  }

  /** Removes finalizers (anyone may). No-op when none are present. */
  removeFinalizer(namespace: string, type: string, id: string, ...finalizers: string[]): void {
    const cur = this.mustExist({ namespace, type, id });
    const next = cur.metadata.finalizers.filter((f) => !finalizers.includes(f));
    if (next.length !== cur.metadata.finalizers.length) this.replace(cur, { finalizers: next });
  }

  /**
   * Watches one resource (target.id set) or a whole kind; events go to `onEvent` in the
   * store's global order until `opts.signal` aborts. Bootstrap and tail events are
   * delivered before this returns (unless called from inside another watch callback, in
   * which case they come before any later event). Returns a function that also cancels.
   */
  watch<S = unknown>(target: WatchTarget, opts: WatchOptions, onEvent: WatchCallback<S>): () => void {
    const { signal } = opts;
    if (signal.aborted) return () => {};
    const tail = opts.tailEvents ?? 0;
    if (tail < 0) throw new InvalidInputError("tailEvents must not be negative");
    if (tail > 0 && opts.bootstrap && target.id === undefined) {
      throw new InvalidInputError("bootstrap contents and tail events are mutually exclusive");
    }
    const kind = kindKey(target);
    const watcher: Watcher = { kind, id: target.id, since: this.seq, signal, callback: onEvent as WatchCallback };
    let set = this.watchers.get(kind);
    if (!set) this.watchers.set(kind, (set = new Set()));
    set.add(watcher);
    const cancel = () => {
      const s = this.watchers.get(kind);
      s?.delete(watcher);
      if (s && s.size === 0) this.watchers.delete(kind);
      signal.removeEventListener("abort", cancel);
    };
    signal.addEventListener("abort", cancel, { once: true });

    const initial: WatchEvent[] = [];
    if (tail > 0) {
      const past = (this.history.get(kind) ?? []).filter((e) => target.id === undefined || e.id === target.id);
      for (const e of past.slice(-tail)) initial.push(e.event);
    } else if (target.id !== undefined) {
      const cur = this.resources.get(kind)?.get(target.id);
      initial.push(
        cur
          ? { type: "created", resource: cur }
          : { type: "destroyed", resource: tombstone(target.namespace, target.type, target.id) },
      );
    } else if (opts.bootstrap) {
      const all = [...(this.resources.get(kind)?.values() ?? [])].sort(byId);
      for (const r of all) initial.push({ type: "created", resource: r });
      initial.push({ type: "bootstrapped", resource: tombstone(target.namespace, target.type) });
    }
    if (initial.length > 0) {
      this.exclusive(() => {
        for (const e of initial) deliver(watcher, e);
      });
    }
    return cancel;
  }

  /** Number of active watches (diagnostics; lets tests check that cancelled watches are released). */
  watcherCount(): number {
    let n = 0;
    for (const set of this.watchers.values()) n += set.size;
    return n;
  }

  /** Every (namespace, type) that currently holds resources. */
  kinds(): KindPointer[] {
    const out: KindPointer[] = [];
    for (const [key, m] of this.resources) {
      if (m.size === 0) continue;
      const [namespace, type] = key.split("\u0000") as [string, string];
      out.push({ namespace, type });
    }
    return out;
  }

  private kindMap(namespace: string, type: string): Map<string, Resource> {
    const key = kindKey({ namespace, type });
    let m = this.resources.get(key);
    if (!m) this.resources.set(key, (m = new Map()));
    return m;
  }

  private mustExist(p: ResourcePointer): Resource {
    const cur = this.resources.get(kindKey(p))?.get(p.id);
    if (!cur) throw notFound(p);
    return cur;
  }

  /** Stores a new snapshot of `cur` with the given changes, version+1, and emits "updated". */
  private replace(
    cur: Resource,
    change: {
      spec?: unknown;
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
      phase?: Phase;
      finalizers?: string[];
    },
  ): Resource {
    const m = cur.metadata;
    const next: Resource = {
      metadata: {
        ...m,
        version: m.version + 1,
        updated: this.now(),
        phase: change.phase ?? m.phase,
        labels: change.labels ?? m.labels,
        annotations: change.annotations ?? m.annotations,
        finalizers: change.finalizers ?? m.finalizers,
      },
      spec: "spec" in change ? change.spec : cur.spec,
    };
    this.resources.get(kindKey(m))?.set(m.id, next);
    this.emit({ type: "updated", resource: next, old: cur });
    return cloneResource(next);
  }

  // Stored snapshots are never mutated after being stored (replace builds new ones), so
  // events and history may share them; watchers get their own copies on delivery.
  private emit(event: WatchEvent): void {
    const m = event.resource.metadata;
    const stored: StoredEvent = { seq: ++this.seq, kind: kindKey(m), id: m.id, event };
    let h = this.history.get(stored.kind);
    if (!h) this.history.set(stored.kind, (h = []));
    h.push(stored);
    if (h.length > this.historyCapacity) h.splice(0, h.length - this.historyCapacity);
    this.queue.push(stored);
    this.exclusive(() => {});
  }

  /** Runs fn with dispatch held, then drains queued events (unless an outer drain will). */
  private exclusive(fn: () => void): void {
    if (this.dispatching) {
      fn();
      return;
    }
    this.dispatching = true;
    try {
      fn();
      while (this.queue.length > 0) {
        const e = this.queue.shift()!;
        const set = this.watchers.get(e.kind);
        if (!set) continue;
        for (const w of [...set]) {
          if (w.signal.aborted || e.seq <= w.since) continue;
          if (w.id !== undefined && w.id !== e.id) continue;
          deliver(w, e.event);
        }
      }
    } finally {
      this.dispatching = false;
    }
  }
}

function deliver(w: Watcher, event: WatchEvent): void {
  if (w.signal.aborted) return;
  const copy: WatchEvent = { type: event.type, resource: cloneResource(event.resource) };
  if (event.old) copy.old = cloneResource(event.old);
  try {
    w.callback(copy);
  } catch (err) {
    log.error("watch callback failed", {
      error: describeError(err),
      namespace: event.resource.metadata.namespace,
      type: event.resource.metadata.type,
    });
  }
}

function byId(a: Resource, b: Resource): number {
  return a.metadata.id < b.metadata.id ? -1 : a.metadata.id > b.metadata.id ? 1 : 0;
}

function pointerOf(r: Resource): ResourcePointer {
  return { namespace: r.metadata.namespace, type: r.metadata.type, id: r.metadata.id };
}

function describe(p: ResourcePointer): string {
  return `${p.namespace}/${p.type}/${p.id}`;
}

function notFound(p: ResourcePointer): NotFoundError {
  return new NotFoundError(`resource ${describe(p)} doesn't exist`, { namespace: p.namespace, type: p.type, id: p.id });
}

function checkOwner(cur: Resource, owner: string): void {
  if (cur.metadata.owner !== owner) {
    throw new PermissionDeniedError(
      `resource ${describe(cur.metadata)} is owned by "${cur.metadata.owner}", not "${owner}"`,
      {
        ...pointerOf(cur),
        owner: cur.metadata.owner,
        requestedOwner: owner,
      },
    );
  }
}
