// talosctl health's server side for a cluster of more than this node: every node read through
// apid's socket with `nodes` (MachineService) or `node` (COSI) and the caller's roles, as Talos's
// HealthCheck reads through its LocalClientProvider; a fake apid answers per node with Talos's
// wire messages.
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { lookupMessage, rawServiceDefinition } from "../../../agent/src/api/index.js";
import { roleKey } from "../../../agent/src/grpc/metadata.js";
import { apiNodeReader, NodeCallError } from "../../../agent/src/machined/health/api-node.js";
import { defaultClusterChecks } from "../../../agent/src/machined/health/checks.js";
import type { NodeReader } from "../../../agent/src/machined/health/checks.js";
import { streamHealthCheck, type HealthCheckRequest } from "../../../agent/src/machined/rpc/health.js";
import { ResourceState } from "../../../agent/src/resources/state.js";

const A = "10.5.0.2";
const B = "10.5.0.3";
// Member IDs past 2^53: a JS number would round them.
const ID_A = "12345678901234567891";
const ID_B = "17870556149326573825";

interface FakeNode {
  members: { id: string; hostname: string; peer_urls: string[]; is_learner: boolean }[];
  error?: string;
  stage: string;
  ephemeral?: string;
}
const member = (hostname: string, id: string, ip: string) => ({
  id,
  hostname,
  peer_urls: [`https://${ip}:2380`],
  client_urls: [`https://${ip}:2379`],
  is_learner: false,
});
const nodes = new Map<string, FakeNode>();
const seen: { method: string; route: string; target: string; roles: string[] }[] = [];
// grpc-js sends repeated values of a key as one header joined with ", " (apid splits them).
const rolesOf = (md: grpc.Metadata) =>
  md
    .get(roleKey)
    .flatMap((v) => String(v).split(","))
    .map((r) => r.trim());

function reset(): void {
  const both = [member("cp-a", ID_A, A), member("cp-b", ID_B, B)];
  nodes.set(A, { members: both, stage: "running", ephemeral: "/dev/vda6" });
  nodes.set(B, { members: [...both].reverse(), stage: "booting" });
  seen.length = 0;
}

const encode = (type: string, v: object) => {
  const t = lookupMessage(type);
  return Buffer.from(t.encode(t.fromObject(v)).finish());
};

/** A handler answering for the node its metadata names, in apid's reply shape (metadata.hostname, metadata.error). */
function handler(
  method: string,
  resType: string,
  route: "nodes" | "node",
  reply: (n: FakeNode, target: string) => object,
) {
  return (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
    const target = String(call.metadata.get(route)[0] ?? "");
    seen.push({ method, route, target, roles: rolesOf(call.metadata) });
    const n = nodes.get(target);
    if (!n) return cb({ code: grpc.status.UNAVAILABLE, details: `connection refused to ${target}` });
    if (route === "nodes" && n.error)
      return cb(null, encode(resType, { messages: [{ metadata: { hostname: target, error: n.error } }] }));
    try {
      cb(null, encode(resType, reply(n, target)));
    } catch (err) {
      cb(err as grpc.ServiceError);
    }
  };
}

let socket: string;
const server = new grpc.Server();

before(async () => {
  socket = path.join(mkdtempSync(path.join(os.tmpdir(), "apid-")), "apid.sock");
  const machine = {
    ServiceList: handler("ServiceList", "machine.ServiceListResponse", "nodes", (_n, t) => ({
      messages: [
        {
          metadata: { hostname: t },
          services: [
            {
              id: "etcd",
              state: "Running",
              events: { events: [{ state: "Running", msg: "Health check successful" }] },
              health: { healthy: true },
            },
          ],
        },
      ],
    })),
    EtcdMemberList: handler("EtcdMemberList", "machine.EtcdMemberListResponse", "nodes", (n, t) => ({
      messages: [{ metadata: { hostname: t }, members: n.members }],
    })),
    Version: handler("Version", "machine.VersionResponse", "nodes", (_n, t) => ({
      messages: [{ metadata: { hostname: t }, platform: { name: "metal", mode: "metal" } }],
    })),
    Memory: handler("Memory", "machine.MemoryResponse", "nodes", (_n, t) => ({
      messages: [{ metadata: { hostname: t }, meminfo: { memtotal: 4_000_000 } }],
    })),
    Mounts: handler("Mounts", "machine.MountsResponse", "nodes", (_n, t) => ({
      messages: [
        { metadata: { hostname: t }, stats: [{ filesystem: "/dev/vda6", size: 9_000_000_000, mounted_on: "/var" }] },
      ],
    })),
  };
  const machineStatusGet = handler("Get", "cosi.resource.GetResponse", "node", (n) => ({
    resource: { metadata: {}, spec: { yaml_spec: `stage: ${n.stage}\n` } },
  }));
  const cosi = {
    Get: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
      const req = lookupMessage("cosi.resource.GetRequest").toObject(
        lookupMessage("cosi.resource.GetRequest").decode(call.request),
      ) as { type: string; id: string };
      const n = nodes.get(String(call.metadata.get("node")[0] ?? ""));
      if (req.type === "MountStatuses.runtime.talos.dev") {
        seen.push({
          method: "Get",
          route: "node",
          target: String(call.metadata.get("node")[0]),
          roles: rolesOf(call.metadata),
        });
        if (!n?.ephemeral)
          return cb({
            code: grpc.status.NOT_FOUND,
            details: `resource MountStatuses.runtime.talos.dev(runtime/EPHEMERAL@undefined) doesn't exist`,
          });
        return cb(
          null,
          encode("cosi.resource.GetResponse", {
            resource: {
              metadata: {},
              spec: { yaml_spec: `source: ${n.ephemeral}\ntarget: /var\nfilesystemType: xfs\n` },
            },
          }),
        );
      }
      return machineStatusGet(call, cb);
    },
    List: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      seen.push({
        method: "List",
        route: "node",
        target: String(call.metadata.get("node")[0]),
        roles: rolesOf(call.metadata),
      });
      for (const id of ["kube-system/kube-apiserver-cp-a", "kube-system/kube-scheduler-cp-a"])
        call.write(
          encode("cosi.resource.ListResponse", { resource: { metadata: { id }, spec: { yaml_spec: "{}\n" } } }),
        );
      call.end();
    },
  };
  server.addService(rawServiceDefinition("machine.MachineService"), machine);
  server.addService(rawServiceDefinition("cosi.resource.State"), cosi);
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
});
after(() => server.forceShutdown());

const signal = new AbortController().signal;

test("each read names one node (`nodes` for MachineService, `node` for COSI) and carries the caller's roles", async () => {
  reset();
  const r = apiNodeReader({ socket, roles: ["os:reader", "os:operator"] });
  try {
    const members = await r.etcdMembers(B, signal);
    assert.deepEqual(members, {
      hostname: B,
      members: [
        { hostname: "cp-b", id: ID_B, isLearner: false, peerUrls: [`https://${B}:2380`] },
        { hostname: "cp-a", id: ID_A, isLearner: false, peerUrls: [`https://${A}:2380`] },
      ],
    });
    assert.deepEqual(await r.service(A, "etcd", signal), {
      hostname: A,
      events: [{ state: "Running", msg: "Health check successful" }],
      healthy: true,
    });
    assert.equal(await r.service(A, "kubelet", signal), undefined);
    assert.equal(await r.platformMode(A, signal), "metal");
    assert.equal(await r.memoryTotalKiB(A, signal), 4_000_000);
    assert.equal(await r.machineStage(B, signal), "booting");
    assert.deepEqual(await r.ephemeral(A, signal), { source: "/dev/vda6", sizeBytes: 9_000_000_000 });
    assert.equal(await r.ephemeral(B, signal), undefined);
    assert.deepEqual(await r.staticPodIds(A, signal), [
      "kube-system/kube-apiserver-cp-a",
      "kube-system/kube-scheduler-cp-a",
    ]);
    assert.deepEqual(
      seen.map((s) => `${s.method} ${s.route}=${s.target}`),
      [
        "EtcdMemberList nodes=10.5.0.3",
        "ServiceList nodes=10.5.0.2",
        "ServiceList nodes=10.5.0.2",
        "Version nodes=10.5.0.2",
        "Memory nodes=10.5.0.2",
        "Get node=10.5.0.3",
        "Get node=10.5.0.2",
        "Mounts nodes=10.5.0.2",
        "Get node=10.5.0.3",
        "List node=10.5.0.2",
      ],
    );
    assert.ok(seen.every((s) => s.roles.join(",") === "os:reader,os:operator"));
  } finally {
    r.close();
  }
});

test("a node's error in the reply's metadata, or a failed call, is a NodeCallError naming the node", async () => {
  reset();
  nodes.get(B)!.error = "rpc error: code = Unavailable desc = connection error";
  const r = apiNodeReader({ socket, roles: ["os:admin"] });
  try {
    await assert.rejects(
      r.etcdMembers(B, signal),
      (err: unknown) =>
        err instanceof NodeCallError && err.message === `${B}: rpc error: code = Unavailable desc = connection error`,
    );
    await assert.rejects(
      r.platformMode("10.5.0.9", signal),
      (err: unknown) => err instanceof NodeCallError && err.message === "10.5.0.9: connection refused to 10.5.0.9",
    );
  } finally {
    r.close();
  }
});

class FakeCall extends EventEmitter {
  readonly written: string[] = [];
  readonly metadata = new grpc.Metadata();
  constructor(readonly request: HealthCheckRequest) {
    super();
    this.metadata.add(roleKey, "os:reader");
  }
  write(m: { message: string }): boolean {
    this.written.push(m.message);
    return true;
  }
  end(): void {}
}
const asCall = (c: FakeCall) => c as unknown as Parameters<typeof streamHealthCheck>[1];

const etcdChecks = () => defaultClusterChecks().filter((c) => c.description.startsWith("etcd "));
const refusingLocal = new Proxy({} as NodeReader, {
  get: () => async () => assert.fail("a cluster of more than this node is read through apid"),
});

async function run(
  controlPlanes: string[],
  local: NodeReader = refusingLocal,
): Promise<{ lines: string[]; opened: string[][] }> {
  const opened: string[][] = [];
  const call = new FakeCall({ wait_timeout: { seconds: 100 }, cluster_info: { control_plane_nodes: controlPlanes } });
  await streamHealthCheck(
    {
      state: new ResourceState(),
      nodes: local,
      kube: async () => assert.fail("no Kubernetes check runs"),
      checks: etcdChecks(),
      isThisNode: (ip) => ip === A,
      remoteNodes: (roles) => {
        opened.push(roles);
        return apiNodeReader({ socket, roles });
      },
      // The request's 100 s and the checks' 5 min become 1 s and 3 s; a failing check ends the run at 1 s.
      scale: 0.01,
    },
    asCall(call),
  ).catch(() => undefined);
  return { lines: call.written, opened };
}

test("two control planes: the etcd checks read both nodes through apid with the caller's roles and pass", async () => {
  reset();
  const { lines, opened } = await run([A, B]);
  assert.deepEqual(lines, [
    `discovered nodes: ["${A}" "${B}"]`,
    "waiting for etcd to be healthy: ...",
    "waiting for etcd to be healthy: OK",
    "waiting for etcd members to be consistent across nodes: ...",
    "waiting for etcd members to be consistent across nodes: OK",
    "waiting for etcd members to be control plane nodes: ...",
    "waiting for etcd members to be control plane nodes: OK",
  ]);
  assert.deepEqual(opened, [["os:reader"]]);
  assert.deepEqual(new Set(seen.filter((s) => s.method === "EtcdMemberList").map((s) => s.target)), new Set([A, B]));
});

test("two control planes whose member lists differ fail the consistency check with Talos's text", async () => {
  reset();
  nodes.get(B)!.members = [member("cp-b", ID_B, B)];
  const { lines } = await run([A, B]);
  assert.ok(
    lines.includes(
      `waiting for etcd members to be consistent across nodes: ${B}: expected to have [cp-a cp-b] members, got [cp-b]`,
    ),
    lines.join("\n"),
  );
});

test("an etcd member outside the control plane nodes fails the control plane check", async () => {
  reset();
  nodes.get(A)!.members.push(member("cp-c", "3", "10.5.0.7"));
  nodes.get(B)!.members.push(member("cp-c", "3", "10.5.0.7"));
  const failed = await run([A, B]);
  assert.ok(
    failed.lines.includes(
      `waiting for etcd members to be control plane nodes: etcd member ips ["${A}" "${B}" "10.5.0.7"] are not subset of control plane node ips ["${A}" "${B}"]`,
    ),
    failed.lines.join("\n"),
  );
});

test("this node alone keeps the direct path: apid is not asked", async () => {
  reset();
  const local: NodeReader = {
    service: async (n) => ({ hostname: n, events: [{ state: "Running", msg: "" }], healthy: true }),
    etcdMembers: async (n) => ({
      hostname: n,
      members: [{ hostname: "cp-a", id: ID_A, isLearner: false, peerUrls: [`https://${A}:2380`] }],
    }),
    platformMode: async () => "metal",
    memoryTotalKiB: async () => 0,
    ephemeral: async () => undefined,
    machineStage: async () => "running",
    staticPodIds: async () => [],
  };
  const { lines, opened } = await run([A], local);
  assert.equal(lines.at(-1), "waiting for etcd members to be control plane nodes: OK");
  assert.deepEqual(opened, []);
  assert.deepEqual(seen, []);
});
