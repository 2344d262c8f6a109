// Runs controllers: each declares its inputs (watched kinds or single resources)
// and the output types it owns, and gets its reconcile called whenever an input
// changes (changes arriving during a run coalesce into one more run). A failing
// reconcile is retried with exponential backoff. Writes go through a context that
// stamps the controller's name as owner and refuses types it does not output.

import { PermissionDeniedError, describeError } from "../errors.js";
import { type Logger, logger } from "../log.js";
import type { Resource } from "./resource.js";
import type { ModifyOptions, ResourceState } from "./state.js";

export interface ControllerInput {
  namespace: string;
  type: string;
  /** Watch one resource only. */
  id?: string;
  /** Reported by dependencies(); "strong" (default) or "weak" as COSI names them. */
  kind?: "strong" | "weak";
}

export interface ControllerOutput {
  type: string;
  /** "exclusive" (default): only this controller may write the type. "shared": several may, each owning its own ids. */
  kind?: "exclusive" | "shared";
}

export interface Controller {
  /** Also the owner stamped on everything it writes, e.g. `network.LinkStatusController`. */
  name: string;
  inputs: readonly ControllerInput[];
  outputs: readonly ControllerOutput[];
  reconcile(ctx: ControllerContext): Promise<void>;
  /**
   * Inputs that are not resources (what machined's sequencer and supervisor report, as Talos's
   * controllers take channels): the controller calls `trigger` whenever they change.
   */
  watchSources?(trigger: () => void, signal: AbortSignal): void;
}

/** What a reconcile sees: reads of anything, writes of its own outputs only. */
export interface ControllerContext {
  readonly name: string;
  readonly signal: AbortSignal;
  readonly log: Logger;
  get<S = unknown>(namespace: string, type: string, id: string): Resource<S> | undefined;
  list<S = unknown>(namespace: string, type: string): Resource<S>[];
  /** Create or update an output (no write when unchanged). */
  modify<S>(
    namespace: string,
    type: string,
    id: string,
    fn: (current: S | undefined) => S,
    opts?: ModifyOptions,
  ): Resource<S>;
  /** Phase tearingDown; true when no finalizers remain. */
  teardown(namespace: string, type: string, id: string): boolean;
  destroy(namespace: string, type: string, id: string): void;
  /** Destroys this controller's outputs of `type` whose id is not in `keep` (finalizers permitting); returns the ids destroyed. */
  destroyOthers(namespace: string, type: string, keep: ReadonlySet<string>): string[];
  /** Finalizers on inputs (anyone may add/remove). */
  addFinalizer(namespace: string, type: string, id: string, ...finalizers: string[]): void;
  removeFinalizer(namespace: string, type: string, id: string, ...finalizers: string[]): void;
  /** Run reconcile again after `ms` even without input changes (polling controllers). */
  requeueAfter(ms: number): void;
}

export type DependencyEdgeType = "outputExclusive" | "outputShared" | "inputStrong" | "inputWeak";

/** inspect.DependencyEdgeType numbers for each edge type. */
export const dependencyEdgeTypeNumbers: Readonly<Record<DependencyEdgeType, number>> = {
  outputExclusive: 0,
  inputStrong: 1,
  inputWeak: 2,
  outputShared: 3,
};

/** One edge of the controller graph (InspectService.ControllerRuntimeDependencies). */
export interface DependencyEdge {
  controllerName: string;
  edgeType: DependencyEdgeType;
  namespace: string;
  type: string;
  id?: string;
}

export interface ControllerRuntimeOptions {
  /** First retry delay after a failure; doubles per consecutive failure. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

interface Slot {
  controller: Controller;
  outputs: Set<string>;
  log: Logger;
  running: boolean;
  /** An input changed since the current run started (or a run was asked for). */
  pending: boolean;
  scheduled: boolean;
  failures: number;
  retryTimer?: NodeJS.Timeout;
  requeueTimer?: NodeJS.Timeout;
  runs: number;
}

const baseLog = logger("controller-runtime");

export class ControllerRuntime {
  private readonly slots: Slot[] = [];
  private readonly exclusiveOwners = new Map<string, string>();
  private signal: AbortSignal | undefined;
  private idleWaiters: (() => void)[] = [];
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;

  constructor(
    private readonly state: ResourceState,
    opts: ControllerRuntimeOptions = {},
  ) {
    this.initialBackoffMs = opts.initialBackoffMs ?? 100;
    this.maxBackoffMs = opts.maxBackoffMs ?? 30_000;
  }

  /** Adds a controller; before or after start. Two controllers may not both exclusively own a type. */
  register(controller: Controller): void {
    if (this.slots.some((s) => s.controller.name === controller.name)) {
      throw new PermissionDeniedError(`controller ${controller.name} is already registered`, {
        controller: controller.name,
      });
    }
    for (const out of controller.outputs) {
      const owner = this.exclusiveOwners.get(out.type);
      if (
        owner !== undefined ||
        ((out.kind ?? "exclusive") === "exclusive" && this.slots.some((s) => s.outputs.has(out.type)))
      ) {
        throw new PermissionDeniedError(
          `resource type ${out.type} is already an output of controller ${owner ?? "another controller"}`,
          {
            controller: controller.name,
            type: out.type,
          },
        );
      }
    }
    for (const out of controller.outputs) {
      if ((out.kind ?? "exclusive") === "exclusive") this.exclusiveOwners.set(out.type, controller.name);
    }
    const slot: Slot = {
      controller,
      outputs: new Set(controller.outputs.map((o) => o.type)),
      log: baseLog.child({ controller: controller.name }),
      running: false,
      pending: false,
      scheduled: false,
      failures: 0,
      runs: 0,
    };
    this.slots.push(slot);
    if (this.signal && !this.signal.aborted) this.activate(slot, this.signal);
  }

  /** Starts every controller (one initial run each, then on input changes) until `signal` aborts. */
  start(signal: AbortSignal): void {
    if (this.signal) throw new PermissionDeniedError("controller runtime already started");
    this.signal = signal;
    signal.addEventListener(
      "abort",
      () => {
        for (const s of this.slots) {
          clearTimeout(s.retryTimer);
          clearTimeout(s.requeueTimer);
        }
        this.notifyIdle();
      },
      { once: true },
    );
    for (const slot of this.slots) this.activate(slot, signal);
  }

  /** Resolves once no reconcile is running or about to run (retries waiting on backoff do not count). */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** How many times each controller's reconcile has completed or failed (diagnostics, tests). */
  runCounts(): Record<string, number> {
    return Object.fromEntries(this.slots.map((s) => [s.controller.name, s.runs]));
  }

  /** The controller graph: inputs and outputs of every registered controller. */
  dependencies(): DependencyEdge[] {
    const edges: DependencyEdge[] = [];
    for (const { controller: c } of this.slots) {
      for (const i of c.inputs) {
        const edge: DependencyEdge = {
          controllerName: c.name,
          edgeType: i.kind === "weak" ? "inputWeak" : "inputStrong",
          namespace: i.namespace,
          type: i.type,
        };
        if (i.id !== undefined) edge.id = i.id;
        edges.push(edge);
      }
      for (const o of c.outputs) {
        edges.push({
          controllerName: c.name,
          edgeType: o.kind === "shared" ? "outputShared" : "outputExclusive",
          namespace: "",
          type: o.type,
        });
      }
    }
    return edges;
  }

  private activate(slot: Slot, signal: AbortSignal): void {
    for (const input of slot.controller.inputs) {
      const target =
        input.id === undefined
          ? { namespace: input.namespace, type: input.type }
          : { namespace: input.namespace, type: input.type, id: input.id };
      this.state.watch(target, { signal }, () => this.trigger(slot));
    }
    slot.controller.watchSources?.(() => this.trigger(slot), signal);
    this.trigger(slot);
  }

  private trigger(slot: Slot): void {
    if (this.signal?.aborted) return;
    slot.pending = true;
    if (slot.running || slot.scheduled) return;
    clearTimeout(slot.retryTimer);
    slot.retryTimer = undefined;
    slot.scheduled = true;
    setImmediate(() => void this.run(slot));
  }

  private async run(slot: Slot): Promise<void> {
    slot.scheduled = false;
    const signal = this.signal!;
    if (signal.aborted) return this.notifyIdle();
    slot.pending = false;
    slot.running = true;
    try {
      await slot.controller.reconcile(this.contextFor(slot, signal));
      slot.failures = 0;
    } catch (err) {
      slot.failures++;
      if (!signal.aborted) {
        const delay = Math.min(this.initialBackoffMs * 2 ** (slot.failures - 1), this.maxBackoffMs);
        slot.log.warn("controller failed", { error: describeError(err), failures: slot.failures, retryInMs: delay });
        slot.retryTimer = setTimeout(() => this.trigger(slot), delay);
      }
    } finally {
      slot.running = false;
      slot.runs++;
    }
    if (slot.pending && !signal.aborted) {
      slot.pending = false;
      this.trigger(slot);
    }
    this.notifyIdle();
  }

  private contextFor(slot: Slot, signal: AbortSignal): ControllerContext {
    const state = this.state;
    const name = slot.controller.name;
    const mustOutput = (type: string): void => {
      if (!slot.outputs.has(type)) {
        throw new PermissionDeniedError(`controller ${name} does not output ${type}`, { controller: name, type });
      }
    };
    return {
      name,
      signal,
      log: slot.log,
      get: (ns, type, id) => state.get(ns, type, id),
      list: (ns, type) => state.list(ns, type),
      modify: (ns, type, id, fn, opts) => {
        mustOutput(type);
        return state.modify(ns, type, id, name, fn, opts);
      },
      teardown: (ns, type, id) => {
        mustOutput(type);
        return state.teardown(ns, type, id, { owner: name });
      },
      destroy: (ns, type, id) => {
        mustOutput(type);
        state.destroy(ns, type, id, { owner: name });
      },
      destroyOthers: (ns, type, keep) => {
        mustOutput(type);
        const gone: string[] = [];
        for (const r of state.list(ns, type)) {
          if (r.metadata.owner !== name || keep.has(r.metadata.id)) continue;
          if (state.teardown(ns, type, r.metadata.id, { owner: name })) {
            state.destroy(ns, type, r.metadata.id, { owner: name });
            gone.push(r.metadata.id);
          }
        }
        return gone;
      },
      addFinalizer: (ns, type, id, ...f) => state.addFinalizer(ns, type, id, ...f),
      removeFinalizer: (ns, type, id, ...f) => state.removeFinalizer(ns, type, id, ...f),
      requeueAfter: (ms) => {
        clearTimeout(slot.requeueTimer);
        // The abort handler already cleared the timers; one armed now would outlive shutdown.
        if (signal.aborted) return;
        slot.requeueTimer = setTimeout(() => this.trigger(slot), ms);
      },
    };
  }

  private isIdle(): boolean {
    return this.signal?.aborted === true
      ? this.slots.every((s) => !s.running)
      : this.slots.every((s) => !s.running && !s.scheduled);
  }

  private notifyIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
