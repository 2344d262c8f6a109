import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { decode, serviceDefinition } from "../../../agent/src/api/index.js";
import { cosiStateImpl } from "../../../agent/src/grpc/cosi-server.js";
import { addService } from "../../../agent/src/grpc/server.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import { MachineStatusType, ServiceType } from "../../../agent/src/resources/catalog/runtime.js";
import { MachineConfigType } from "../../../agent/src/resources/catalog/config.js";
import { newResource } from "../../../agent/src/resources/resource.js";
import { ResourceState } from "../../../agent/src/resources/state.js";

type Obj = Record<string, unknown>;
interface WireRes {
  metadata: Obj & { id: string; version: string; namespace: string; type: string; phase: string };
  spec: { proto_spec: Buffer; yaml_spec: string };
}
interface WireEvent {
  event_type: number;
  resource: WireRes;
  old: WireRes | null;
}

const ServiceDef = serviceDefinition("cosi.resource.State");
const StateClient = grpc.makeGenericClientConstructor(ServiceDef, "State");

// The generic client's methods are created from the definition at runtime.
type Unary = (req: Obj, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res?: Obj) => void) => void;
type Stream = (req: Obj, md: grpc.Metadata) => grpc.ClientReadableStream<Obj>;

describe("cosi.resource.State server", () => {
  let dir: string;
  let server: grpc.Server;
  let client: grpc.Client & Record<string, Unary | Stream>;
  const state = new ResourceState();

  const md = (role: string): grpc.Metadata => {
    const m = new grpc.Metadata();
    m.set("talos-role", role);
    return m;
  };
  const unary = (method: string, req: Obj, role = "os:reader"): Promise<Obj> =>
    new Promise((resolve, reject) =>
      (client[method] as Unary)(req, md(role), (err, res) => (err ? reject(err) : resolve(res!))),
    );
  const collect = (method: string, req: Obj, role = "os:reader"): Promise<Obj[]> =>
    new Promise((resolve, reject) => {
      const out: Obj[] = [];
      const s = (client[method] as Stream)(req, md(role));
      s.on("data", (d: Obj) => out.push(d));
      s.on("error", reject);
      s.on("end", () => resolve(out));
    });

  /** Opens a watch; `next(n)` resolves with the next n responses. */
  function openWatch(req: Obj, role = "os:reader") {
    const s = (client.Watch as Stream)(req, md(role));
    const queue: Obj[] = [];
    let waiter: (() => void) | undefined;
    let failure: Error | undefined;
    s.on("data", (d: Obj) => {
      queue.push(d);
      waiter?.();
    });
    s.on("error", (e: Error) => {
      failure = e;
      waiter?.();
    });
    return {
      async next(n: number): Promise<Obj[]> {
        while (queue.length < n) {
          if (failure) throw failure;
          await new Promise<void>((r) => (waiter = r));
        }
        return queue.splice(0, n);
      },
      cancel: () => s.cancel(),
    };
  }

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "cosi-test-"));
    registerCatalog(state);
    state.create(newResource("runtime", ServiceType, "machined", { running: true, healthy: true, unknown: false }), {
      owner: "v1alpha1.ServiceController",
    });
    state.create(
      newResource(
        "runtime",
        ServiceType,
        "apid",
        { running: true, healthy: false, unknown: true },
        { labels: { role: "api" } },
      ),
      { owner: "v1alpha1.ServiceController" },
    );
    state.create(newResource("config", MachineConfigType, "v1alpha1", { toYaml: () => "version: v1alpha1\n" }), {
      owner: "config.AcquireController",
    });
    server = new grpc.Server();
    addService(
      server,
      "cosi.resource.State",
      cosiStateImpl(state, { rolesOf: (call) => call.metadata.get("talos-role").map(String) }),
      () => {},
    );
    const sock = path.join(dir, "cosi.sock");
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    client = new StateClient(`unix://${sock}`, grpc.credentials.createInsecure()) as unknown as grpc.Client &
      Record<string, Unary | Stream>;
  });

  after(() => {
    client.close();
    server.forceShutdown();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("Get returns metadata and a spec whose proto_spec decodes to the spec message", async () => {
    const res = (await unary("Get", { namespace: "runtime", type: ServiceType, id: "apid" })).resource as WireRes;
    assert.equal(res.metadata.version, "1");
    assert.equal(res.metadata.owner, "v1alpha1.ServiceController");
    assert.equal(res.metadata.phase, "running");
    assert.deepEqual(res.metadata.labels, { role: "api" });
    assert.ok(Number((res.metadata.created as { seconds: number }).seconds) > 1_600_000_000);
    assert.equal(res.spec.yaml_spec, "running: true\nhealthy: false\nunknown: true\n");
    assert.deepEqual(decode("talos.resource.definitions.v1alpha1.ServiceSpec", res.spec.proto_spec), {
      running: true,
      healthy: false,
      unknown: true,
    });
  });

  it("Get of a missing id is NotFound; unknown types and namespaces are PermissionDenied", async () => {
    await assert.rejects(unary("Get", { namespace: "runtime", type: ServiceType, id: "nope" }), {
      code: grpc.status.NOT_FOUND,
    });
    await assert.rejects(unary("Get", { namespace: "runtime", type: "Bogus.talos.dev", id: "x" }), {
      code: grpc.status.PERMISSION_DENIED,
      details: 'resource type "Bogus.talos.dev" is not supported',
    });
    await assert.rejects(unary("Get", { namespace: "nowhere", type: ServiceType, id: "x" }), {
      code: grpc.status.PERMISSION_DENIED,
      details: 'namespace "nowhere" is not supported',
    });
  });

  it("sensitive types need os:admin", async () => {
    await assert.rejects(unary("Get", { namespace: "config", type: MachineConfigType, id: "v1alpha1" }, "os:reader"), {
      code: grpc.status.PERMISSION_DENIED,
      details: "not authorized",
    });
    await assert.rejects(collect("List", { namespace: "config", type: MachineConfigType }, "os:operator"), {
      code: grpc.status.PERMISSION_DENIED,
    });
    const res = (await unary("Get", { namespace: "config", type: MachineConfigType, id: "v1alpha1" }, "os:admin"))
      .resource as WireRes;
    assert.equal(res.spec.yaml_spec, "version: v1alpha1\n");
    assert.equal(
      (decode("resource.config.MachineConfigSpec", res.spec.proto_spec).yaml_marshalled as Buffer).toString(),
      "version: v1alpha1\n",
    );
  });

  it("writes are refused", async () => {
    await assert.rejects(unary("Destroy", { namespace: "runtime", type: ServiceType, id: "apid" }, "os:admin"), {
      code: grpc.status.PERMISSION_DENIED,
      details: "write access is not allowed",
    });
    await assert.rejects(unary("Create", { resource: {} }, "os:admin"), { code: grpc.status.PERMISSION_DENIED });
    assert.ok(state.get("runtime", ServiceType, "apid"));
  });

  it("List streams one message per resource sorted by id, with label and id filters", async () => {
    const all = await collect("List", { namespace: "runtime", type: ServiceType });
    assert.deepEqual(
      all.map((m) => (m.resource as WireRes).metadata.id),
      ["apid", "machined"],
    );
    const byLabel = await collect("List", {
      namespace: "runtime",
      type: ServiceType,
      options: { label_query: [{ terms: [{ key: "role", op: 1, value: ["api"] }] }] },
    });
    assert.deepEqual(
      byLabel.map((m) => (m.resource as WireRes).metadata.id),
      ["apid"],
    );
    const byId = await collect("List", {
      namespace: "runtime",
      type: ServiceType,
      options: { id_query: { regexp: "^mach" } },
    });
    assert.deepEqual(
      byId.map((m) => (m.resource as WireRes).metadata.id),
      ["machined"],
    );
  });

  it("an invalid id regexp answers INVALID_ARGUMENT on List and Watch", async () => {
    // JS syntax errors, and JS-valid syntax that Go's RE2 (Talos) refuses.
    for (const regexp of ["(", "[a-", "a(?P<x>b)", "(?=m)", "ma(?!x)", "(a)\\1", "a{1001}", "a{2,5000}"]) {
      await assert.rejects(
        collect("List", { namespace: "runtime", type: ServiceType, options: { id_query: { regexp } } }),
        (err: grpc.ServiceError) => err.code === grpc.status.INVALID_ARGUMENT && err.details.includes("regexp"),
        regexp,
      );
      await assert.rejects(
        collect("Watch", {
          namespace: "runtime",
          type: ServiceType,
          options: { id_query: { regexp } },
          api_version: 1,
        }),
        (err: grpc.ServiceError) => err.code === grpc.status.INVALID_ARGUMENT,
        regexp,
      );
    }
    // Escaped lookalikes and a repeat of 1000 are fine.
    const ok = await collect("List", {
      namespace: "runtime",
      type: ServiceType,
      options: { id_query: { regexp: "^m\\(?=|^mach{0,1000}" } },
    });
    assert.deepEqual(
      ok.map((m) => (m.resource as WireRes).metadata.id),
      ["machined"],
    );
  });

  it("lists resource definitions that decode as ResourceDefinitionSpec, and namespaces", async () => {
    const rds = await collect("List", { namespace: "meta", type: "ResourceDefinitions.meta.cosi.dev" });
    const mc = rds.map((m) => m.resource as WireRes).find((r) => r.metadata.id === "machineconfigs.config.talos.dev")!;
    const spec = decode("cosi.resource.meta.ResourceDefinitionSpec", mc.spec.proto_spec);
    assert.equal(spec.display_type, "MachineConfig");
    assert.equal(spec.sensitivity, 1);
    assert.match(mc.spec.yaml_spec, /\nsensitivity: sensitive\n$/);
    const ns = await collect("List", { namespace: "meta", type: "Namespaces.meta.cosi.dev" });
    assert.ok(ns.some((m) => (m.resource as WireRes).metadata.id === "network"));
  });

  it("kind watch: empty readiness response, bootstrap CREATED events, BOOTSTRAPPED, then live events", async () => {
    const w = openWatch({
      namespace: "runtime",
      type: ServiceType,
      options: { bootstrap_contents: true },
      api_version: 1,
    });
    const [ready, c1, c2, boot] = await w.next(4);
    assert.deepEqual(ready!.event, []);
    const ev = (m: Obj) => (m.event as WireEvent[])[0]!;
    assert.equal(ev(c1!).event_type, 0);
    assert.equal(ev(c1!).resource.metadata.id, "apid");
    assert.equal(ev(c2!).resource.metadata.id, "machined");
    assert.equal(ev(boot!).event_type, 3);
    assert.equal(ev(boot!).resource.metadata.version, "undefined");
    assert.equal(ev(boot!).resource.metadata.type, ServiceType);

    state.modify("runtime", ServiceType, "machined", "v1alpha1.ServiceController", () => ({
      running: true,
      healthy: false,
      unknown: false,
    }));
    state.create(newResource("runtime", ServiceType, "trustd", { running: false, healthy: false, unknown: true }), {
      owner: "v1alpha1.ServiceController",
    });
    state.destroy("runtime", ServiceType, "trustd", { owner: "v1alpha1.ServiceController" });
    const [u, c, d] = await w.next(3);
    assert.equal(ev(u!).event_type, 1);
    assert.equal(ev(u!).resource.metadata.version, "2");
    assert.equal(ev(u!).old?.metadata.version, "1");
    assert.equal(ev(u!).resource.spec.yaml_spec, "running: true\nhealthy: false\nunknown: false\n");
    assert.equal(ev(c!).event_type, 0);
    assert.equal(ev(d!).event_type, 2);
    assert.equal(ev(d!).resource.metadata.id, "trustd");
    w.cancel();
  });

  it("kind watch: aggregated bootstrap is one response; api_version 0 drops BOOTSTRAPPED", async () => {
    const agg = openWatch({
      namespace: "runtime",
      type: ServiceType,
      options: { bootstrap_contents: true, aggregated: true },
      api_version: 1,
    });
    const [ready, batch] = await agg.next(2);
    assert.deepEqual(ready!.event, []);
    assert.deepEqual(
      (batch!.event as WireEvent[]).map((e) => e.event_type),
      [0, 0, 3],
    );
    agg.cancel();
    const old = openWatch({ namespace: "runtime", type: ServiceType, options: { bootstrap_contents: true } });
    await old.next(3);
    state.modify("runtime", ServiceType, "apid", "v1alpha1.ServiceController", () => ({
      running: false,
      healthy: false,
      unknown: true,
    }));
    const [next] = await old.next(1);
    assert.equal((next!.event as WireEvent[])[0]!.event_type, 1, "no BOOTSTRAPPED event before live ones");
    old.cancel();
  });

  it("kind watch with a label query turns updates leaving the query into DESTROYED", async () => {
    const w = openWatch({
      namespace: "runtime",
      type: ServiceType,
      options: { bootstrap_contents: true, label_query: [{ terms: [{ key: "role", op: 0 }] }] },
      api_version: 1,
    });
    const first = await w.next(3);
    assert.equal((first[1]!.event as WireEvent[])[0]!.resource.metadata.id, "apid");
    const cur = state.get("runtime", ServiceType, "apid")!;
    state.update({ ...cur, metadata: { ...cur.metadata, labels: {} } }, { owner: "v1alpha1.ServiceController" });
    const [gone] = await w.next(1);
    const e = (gone!.event as WireEvent[])[0]!;
    assert.equal(e.event_type, 2);
    assert.equal(e.old, null);
    w.cancel();
  });

  it("single watch: CREATED with the current state, DESTROYED tombstone for a missing id; bootstrap refused", async () => {
    const w = openWatch({ namespace: "runtime", type: ServiceType, id: "machined", api_version: 1 });
    const [ready, cur] = await w.next(2);
    assert.deepEqual(ready!.event, []);
    assert.equal((cur!.event as WireEvent[])[0]!.event_type, 0);
    assert.equal((cur!.event as WireEvent[])[0]!.resource.metadata.id, "machined");
    w.cancel();

    const m = openWatch({ namespace: "runtime", type: ServiceType, id: "missing", api_version: 1 });
    const [, gone] = await m.next(2);
    const e = (gone!.event as WireEvent[])[0]!;
    assert.equal(e.event_type, 2);
    assert.equal(e.resource.metadata.version, "undefined");
    assert.equal(e.resource.metadata.id, "missing");
    m.cancel();

    const bad = openWatch({
      namespace: "runtime",
      type: ServiceType,
      id: "machined",
      options: { bootstrap_contents: true },
      api_version: 1,
    });
    await assert.rejects(bad.next(1), {
      code: grpc.status.UNIMPLEMENTED,
      details: "bootstrap contents is not implemented for resource watch",
    });
  });

  it("single watch with tail_events replays past events of that id", async () => {
    state.create(
      newResource("runtime", MachineStatusType, "machine", {
        stage: "booting",
        status: { ready: false, unmetConditions: [] },
      }),
      { owner: "runtime.MachineStatusController" },
    );
    state.modify("runtime", MachineStatusType, "machine", "runtime.MachineStatusController", () => ({
      stage: "running",
      status: { ready: true, unmetConditions: [] },
    }));
    const w = openWatch({
      namespace: "runtime",
      type: MachineStatusType,
      id: "machine",
      options: { tail_events: 5 },
      api_version: 1,
    });
    const [, created, updated] = await w.next(3);
    const c = (created!.event as WireEvent[])[0]!;
    const u = (updated!.event as WireEvent[])[0]!;
    assert.equal(c.event_type, 0);
    assert.equal(u.event_type, 1);
    assert.equal(decode("talos.resource.definitions.runtime.MachineStatusSpec", u.resource.spec.proto_spec).stage, 4);
    assert.equal(u.resource.spec.yaml_spec, "stage: running\nstatus:\n    ready: true\n    unmetConditions: []\n");
    w.cancel();
  });

  it("a cancelled watch releases its store watcher", async () => {
    // Cancellation reaches the server asynchronously; wait for it (bounded, not a timing assertion).
    const settle = async (want: number) => {
      for (let i = 0; i < 500 && state.watcherCount() !== want; i++) await new Promise((r) => setTimeout(r, 10));
    };
    // Every earlier test cancelled its watches, so none may remain.
    await settle(0);
    const baseline = state.watcherCount();
    assert.equal(baseline, 0);
    const w = openWatch({
      namespace: "runtime",
      type: ServiceType,
      options: { bootstrap_contents: true },
      api_version: 1,
    });
    await w.next(1);
    assert.equal(state.watcherCount(), baseline + 1);
    w.cancel();
    await settle(baseline);
    assert.equal(state.watcherCount(), baseline);
  });

  it("kind watch refuses bootstrap together with tail events", async () => {
    const w = openWatch({
      namespace: "runtime",
      type: ServiceType,
      options: { bootstrap_contents: true, tail_events: 3 },
      api_version: 1,
    });
    await assert.rejects(w.next(1), { code: grpc.status.INVALID_ARGUMENT });
  });

  it("a watch whose client stops reading ends with an ERRORED buffer overrun event", async () => {
    const small = new grpc.Server();
    addService(
      small,
      "cosi.resource.State",
      cosiStateImpl(state, { rolesOf: () => ["os:admin"], maxPendingResponses: 8 }),
      () => {},
    );
    const sock = path.join(dir, "small.sock");
    await new Promise<void>((resolve, reject) =>
      small.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    const c = new StateClient(`unix://${sock}`, grpc.credentials.createInsecure()) as unknown as Record<
      string,
      Stream
    > &
      grpc.Client;
    // Cleaned up whatever the assertions say: a live server would keep this test file from exiting.
    try {
      const s = c.Watch!(
        { namespace: "runtime", type: "MetaKeys.runtime.talos.dev", api_version: 1 },
        new grpc.Metadata(),
      );
      const got: Obj[] = [];
      const ended = new Promise<void>((resolve) => {
        s.on("end", resolve);
        s.on("error", () => resolve());
      });
      s.on("data", (d: Obj) => got.push(d));
      await new Promise<void>((r) => s.once("data", () => r()));
      s.pause();
      // Far more than the transport's flow-control windows hold, so responses pile up server-side.
      const big = "x".repeat(4096);
      for (let i = 0; i < 3000; i++)
        state.modify("runtime", "MetaKeys.runtime.talos.dev", "0x10", "test", () => ({ value: `${i}${big}` }));
      s.resume();
      await ended;
      const last = (got.at(-1)!.event as (WireEvent & { error: string })[])[0]!;
      assert.equal(last.event_type, 4);
      assert.match(last.error, /^buffer overrun: namespace "runtime" type "MetaKeys.runtime.talos.dev"$/);
      assert.ok(got.length < 3000);
    } finally {
      c.close();
      small.forceShutdown();
      if (state.get("runtime", "MetaKeys.runtime.talos.dev", "0x10"))
        state.destroy("runtime", "MetaKeys.runtime.talos.dev", "0x10", { owner: "test" });
    }
  });

  it("watch of a sensitive type is refused for a reader", async () => {
    const w = openWatch(
      { namespace: "config", type: MachineConfigType, options: { bootstrap_contents: true }, api_version: 1 },
      "os:reader",
    );
    await assert.rejects(w.next(1), { code: grpc.status.PERMISSION_DENIED, details: "not authorized" });
  });
});
