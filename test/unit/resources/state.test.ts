import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AlreadyExistsError, ConflictError, NotFoundError, PermissionDeniedError } from "../../../agent/src/errors.js";
import { isTombstone, newResource } from "../../../agent/src/resources/resource.js";
import { ResourceState, type WatchEvent } from "../../../agent/src/resources/state.js";

interface Spec {
  value: string;
  list?: number[];
}

const NS = "runtime";
const T = "Things.test.dev";

function thing(id: string, value: string): ReturnType<typeof newResource<Spec>> {
  return newResource<Spec>(NS, T, id, { value });
}

function summary(events: WatchEvent<Spec>[]): string[] {
  return events.map((e) => `${e.type}:${e.resource.metadata.id}:${e.resource.metadata.version}`);
}

describe("ResourceState", () => {
  it("creates with version 1 and owner, and bumps the version on every update", () => {
    let t = 1000;
    const s = new ResourceState({ now: () => new Date(t) });
    const created = s.create(thing("a", "x"), { owner: "ctrl" });
    assert.equal(created.metadata.version, 1);
    assert.equal(created.metadata.owner, "ctrl");
    assert.equal(created.metadata.phase, "running");
    assert.equal(created.metadata.created.getTime(), 1000);
    t = 2000;
    const next = s.update({ ...created, spec: { value: "y" } }, { owner: "ctrl" });
    assert.equal(next.metadata.version, 2);
    assert.equal(next.metadata.created.getTime(), 1000);
    assert.equal(next.metadata.updated.getTime(), 2000);
    assert.equal(s.get<Spec>(NS, T, "a")?.spec.value, "y");
    s.update({ ...next, spec: { value: "y" } }, { owner: "ctrl" });
    assert.equal(s.get(NS, T, "a")?.metadata.version, 3);
  });

  it("refuses duplicate create, missing update, wrong owner and version conflicts with typed errors", () => {
    const s = new ResourceState();
    const r = s.create(thing("a", "x"), { owner: "ctrl" });
    assert.throws(() => s.create(thing("a", "x"), { owner: "ctrl" }), AlreadyExistsError);
    assert.throws(() => s.update(thing("b", "x"), { owner: "ctrl" }), NotFoundError);
    assert.throws(() => s.update(r, { owner: "other" }), PermissionDeniedError);
    assert.throws(() => s.destroy(NS, T, "a", { owner: "other" }), PermissionDeniedError);
    assert.throws(() => s.update(r, { owner: "ctrl", expectedVersion: 7 }), ConflictError);
    assert.throws(() => s.destroy(NS, T, "zz", { owner: "ctrl" }), NotFoundError);
    assert.equal(s.get(NS, T, "a")?.metadata.version, 1);
  });

  it("returns copies: mutating what get/list/create return does not change the store", () => {
    const s = new ResourceState();
    const input = newResource<Spec>(NS, T, "a", { value: "x", list: [1] });
    const created = s.create(input, { owner: "" });
    input.spec.list!.push(2);
    created.spec.list!.push(3);
    created.metadata.labels["k"] = "v";
    s.get<Spec>(NS, T, "a")!.spec.list!.push(4);
    s.list<Spec>(NS, T)[0]!.spec.value = "changed";
    const stored = s.get<Spec>(NS, T, "a")!;
    assert.deepEqual(stored.spec, { value: "x", list: [1] });
    assert.deepEqual(stored.metadata.labels, {});
  });

  it("lists sorted by id", () => {
    const s = new ResourceState();
    for (const id of ["c", "a", "b"]) s.create(thing(id, id), { owner: "" });
    assert.deepEqual(
      s.list(NS, T).map((r) => r.metadata.id),
      ["a", "b", "c"],
    );
    assert.deepEqual(s.list(NS, "Other.test.dev"), []);
  });

  it("modify creates, updates, and skips unchanged specs", () => {
    const s = new ResourceState();
    const events: WatchEvent<Spec>[] = [];
    const ac = new AbortController();
    s.watch<Spec>({ namespace: NS, type: T }, { signal: ac.signal }, (e) => events.push(e));
    s.modify<Spec>(NS, T, "a", "ctrl", (cur) => {
      assert.equal(cur, undefined);
      return { value: "1" };
    });
    s.modify<Spec>(NS, T, "a", "ctrl", (cur) => ({ value: cur!.value }));
    s.modify<Spec>(NS, T, "a", "ctrl", () => ({ value: "2" }));
    assert.throws(() => s.modify<Spec>(NS, T, "a", "intruder", () => ({ value: "3" })), PermissionDeniedError);
    assert.deepEqual(summary(events), ["created:a:1", "updated:a:2"]);
    assert.equal(events[1]!.old?.spec.value, "1");
    assert.equal(events[1]!.resource.spec.value, "2");
    ac.abort();
  });

  it("teardown sets the phase; destroy waits for finalizers", () => {
    const s = new ResourceState();
    s.create(thing("a", "x"), { owner: "ctrl" });
    s.addFinalizer(NS, T, "a", "consumer");
    s.addFinalizer(NS, T, "a", "consumer");
    assert.deepEqual(s.get(NS, T, "a")?.metadata.finalizers, ["consumer"]);
    assert.equal(s.get(NS, T, "a")?.metadata.version, 2);
    assert.equal(s.teardown(NS, T, "a", { owner: "ctrl" }), false);
    assert.equal(s.get(NS, T, "a")?.metadata.phase, "tearingDown");
    assert.throws(() => s.destroy(NS, T, "a", { owner: "ctrl" }), ConflictError);
    assert.throws(() => s.modify<Spec>(NS, T, "a", "ctrl", () => ({ value: "z" })), ConflictError);
    s.removeFinalizer(NS, T, "a", "consumer");
    assert.equal(s.teardown(NS, T, "a", { owner: "ctrl" }), true);
    s.destroy(NS, T, "a", { owner: "ctrl" });
    assert.equal(s.get(NS, T, "a"), undefined);
  });

  it("kind watch bootstraps existing resources, marks bootstrapped, then tails live events", () => {
    const s = new ResourceState();
    s.create(thing("b", "x"), { owner: "" });
    s.create(thing("a", "x"), { owner: "" });
    s.create(newResource(NS, "Other.test.dev", "o", {}), { owner: "" });
    const events: WatchEvent<Spec>[] = [];
    const ac = new AbortController();
    s.watch<Spec>({ namespace: NS, type: T }, { bootstrap: true, signal: ac.signal }, (e) => events.push(e));
    assert.deepEqual(summary(events), ["created:a:1", "created:b:1", "bootstrapped::0"]);
    assert.ok(isTombstone(events[2]!.resource));
    s.create(thing("c", "x"), { owner: "" });
    s.create(newResource(NS, "Other.test.dev", "p", {}), { owner: "" });
    s.destroy(NS, T, "a", { owner: "" });
    ac.abort();
    s.create(thing("d", "x"), { owner: "" });
    assert.deepEqual(summary(events).slice(3), ["created:c:1", "destroyed:a:1"]);
  });

  it("single watch starts with the current state or a destroyed tombstone and follows only that id", () => {
    const s = new ResourceState();
    s.create(thing("a", "x"), { owner: "" });
    const got: WatchEvent<Spec>[] = [];
    const missing: WatchEvent<Spec>[] = [];
    const ac = new AbortController();
    s.watch<Spec>({ namespace: NS, type: T, id: "a" }, { signal: ac.signal }, (e) => got.push(e));
    s.watch<Spec>({ namespace: NS, type: T, id: "m" }, { signal: ac.signal }, (e) => missing.push(e));
    s.create(thing("b", "x"), { owner: "" });
    s.modify<Spec>(NS, T, "a", "", () => ({ value: "y" }));
    s.create(thing("m", "x"), { owner: "" });
    assert.deepEqual(summary(got), ["created:a:1", "updated:a:2"]);
    assert.deepEqual(summary(missing), ["destroyed:m:0", "created:m:1"]);
    assert.ok(isTombstone(missing[0]!.resource));
    ac.abort();
  });

  it("tail events replay buffered history before live events", () => {
    const s = new ResourceState({ historyCapacity: 3 });
    s.create(thing("a", "1"), { owner: "" });
    s.modify<Spec>(NS, T, "a", "", () => ({ value: "2" }));
    s.create(thing("b", "1"), { owner: "" });
    s.modify<Spec>(NS, T, "a", "", () => ({ value: "3" }));
    const kind: WatchEvent<Spec>[] = [];
    const single: WatchEvent<Spec>[] = [];
    const ac = new AbortController();
    s.watch<Spec>({ namespace: NS, type: T }, { tailEvents: 10, signal: ac.signal }, (e) => kind.push(e));
    s.watch<Spec>({ namespace: NS, type: T, id: "a" }, { tailEvents: 1, signal: ac.signal }, (e) => single.push(e));
    s.destroy(NS, T, "b", { owner: "" });
    // capacity 3: the first create of "a" fell out of the buffer
    assert.deepEqual(summary(kind), ["updated:a:2", "created:b:1", "updated:a:3", "destroyed:b:1"]);
    assert.deepEqual(summary(single), ["updated:a:3"]);
    ac.abort();
  });

  it("keeps one global order when a watcher writes from inside its callback", () => {
    const s = new ResourceState();
    const seenByB: string[] = [];
    const ac = new AbortController();
    s.watch<Spec>({ namespace: NS, type: T }, { signal: ac.signal }, (e) => {
      if (e.type === "created" && e.resource.metadata.id === "a") s.create(thing("reaction", "x"), { owner: "" });
    });
    s.watch<Spec>({ namespace: NS, type: T }, { signal: ac.signal }, (e) =>
      seenByB.push(`${e.type}:${e.resource.metadata.id}`),
    );
    s.create(thing("a", "x"), { owner: "" });
    assert.deepEqual(seenByB, ["created:a", "created:reaction"]);
    ac.abort();
  });

  it("a watch opened inside a callback does not get events already in its bootstrap", () => {
    const s = new ResourceState();
    const inner: string[] = [];
    const ac = new AbortController();
    s.watch<Spec>({ namespace: NS, type: T }, { signal: ac.signal }, (e) => {
      if (e.resource.metadata.id === "a") {
        s.create(thing("b", "x"), { owner: "" });
        s.watch<Spec>({ namespace: NS, type: T }, { bootstrap: true, signal: ac.signal }, (ev) =>
          inner.push(`${ev.type}:${ev.resource.metadata.id}`),
        );
      }
    });
    s.create(thing("a", "x"), { owner: "" });
    s.create(thing("c", "x"), { owner: "" });
    assert.deepEqual(inner, ["created:a", "created:b", "bootstrapped:", "created:c"]);
    ac.abort();
  });

  it("delivers copies to watchers", () => {
    const s = new ResourceState();
    const ac = new AbortController();
    s.watch<Spec>({ namespace: NS, type: T }, { signal: ac.signal }, (e) => {
      e.resource.spec.value = "mutated";
    });
    s.create(thing("a", "x"), { owner: "" });
    assert.equal(s.get<Spec>(NS, T, "a")?.spec.value, "x");
    ac.abort();
  });
});
