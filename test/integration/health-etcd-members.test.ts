// talosctl health's etcd checks for two control planes whose members are real etcd v3.5.13
// processes (the second joined as a learner and promoted): the HealthCheck reads both nodes
// through an apid socket that routes each `nodes`-addressed call to that node's MachineService
// (EtcdMemberList over the node's etcd client, ServiceList from its supervisor), as apid fans out;
// and one node checking itself alone reads its etcd service and the members directly.
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { lookupMessage, rawServiceDefinition } from "../../agent/src/api/index.js";
import { apiNodeReader } from "../../agent/src/machined/health/api-node.js";
import { defaultClusterChecks, type NodeReader } from "../../agent/src/machined/health/checks.js";
import type { EtcdApiContext } from "../../agent/src/machined/rpc/etcd.js";
import { healthDeps, streamHealthCheck, type HealthCheckRequest } from "../../agent/src/machined/rpc/health.js";
import { serviceListResponse } from "../../agent/src/machined/service-list.js";
import { ResourceState } from "../../agent/src/resources/state.js";
import { etcdBinaries, etcdNode, etcdRoot, type EtcdNode } from "./helpers/etcd-node.js";

let a: EtcdNode;
let b: EtcdNode;
let socket: string;
const apid = new grpc.Server();
// The node addresses the cluster_info names; both members listen on loopback.
const addresses = ["127.0.0.1", "127.0.0.2"];
const byAddress = () =>
  new Map([
    [addresses[0]!, a],
    [addresses[1]!, b],
  ]);

const encode = (type: string, v: object) => {
  const t = lookupMessage(type);
  return Buffer.from(t.encode(t.fromObject(v)).finish());
};

/** apid's fan-out to one node: that node's single message, tagged with the target as hostname. */
function routed(resType: string, answer: (n: EtcdNode) => Promise<{ messages: object[] }>) {
  return (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
    const target = String(call.metadata.get("nodes")[0] ?? "");
    const node = byAddress().get(target);
    if (!node) return cb({ code: grpc.status.INVALID_ARGUMENT, details: `unknown node ${target}` });
    answer(node).then(
      (res) =>
        cb(null, encode(resType, { messages: res.messages.map((m) => ({ ...m, metadata: { hostname: target } })) })),
      (err: grpc.ServiceError) =>
        cb(
          null,
          encode(resType, { messages: [{ metadata: { hostname: target, error: err.details ?? String(err) } }] }),
        ),
    );
  };
}

before(async () => {
  const binaries = etcdBinaries();
  const root = await etcdRoot();
  const peers = () => [`127.0.0.1:${a.ports.client}`, `127.0.0.1:${b.ports.client}`];
  a = await etcdNode({ name: "cp-a", root, binaries, peers });
  b = await etcdNode({ name: "cp-b", root, binaries, peers });
  void a.startWaiting();
  await a.until("Preparing", false);
  await a.call("Bootstrap");
  await a.until("Running");
  void b.startWaiting();
  await b.until("Running");
  await twoVotingMembers();

  socket = path.join(mkdtempSync(path.join(os.tmpdir(), "apid-")), "apid.sock");
  apid.addService(rawServiceDefinition("machine.MachineService"), {
    // The helper decodes 64-bit integers as decimal strings, so member IDs pass through exact.
    EtcdMemberList: routed(
      "machine.EtcdMemberListResponse",
      (n) => n.call("EtcdMemberList") as Promise<{ messages: object[] }>,
    ),
    ServiceList: routed("machine.ServiceListResponse", async (n) => serviceListResponse(n.supervisor.list())),
  });
  await new Promise<void>((resolve, reject) =>
    apid.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
});
after(async () => {
  apid.forceShutdown();
  await b?.close();
  await a?.close();
});

/** Polls until the joined member is promoted (etcd promotes asynchronously); bounded by attempts. */
async function twoVotingMembers(): Promise<void> {
  const c = await a.client();
  try {
    for (let i = 0; i < 600; i++) {
      const { members } = await c.memberList().catch(() => ({ members: [] }));
      if (members.length === 2 && members.every((m) => !m.isLearner && m.name !== "")) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail("timed out waiting for two voting members");
  } finally {
    c.close();
  }
}

class ProgressCall extends EventEmitter {
  readonly lines: string[] = [];
  readonly metadata = new grpc.Metadata();
  constructor(readonly request: HealthCheckRequest) {
    super();
    this.metadata.add("talos-role", "os:reader");
  }
  write(m: { message: string }): boolean {
    this.lines.push(m.message);
    return true;
  }
  end(): void {}
}

const direct = new Proxy({} as NodeReader, { get: () => async () => assert.fail("both nodes are read through apid") });

async function health(): Promise<string[]> {
  const call = new ProgressCall({ wait_timeout: { seconds: 120 }, cluster_info: { control_plane_nodes: addresses } });
  await streamHealthCheck(
    {
      state: new ResourceState(),
      nodes: direct,
      kube: async () => assert.fail("no Kubernetes check runs"),
      checks: defaultClusterChecks().filter((c) => c.description.startsWith("etcd ")),
      isThisNode: () => false,
      remoteNodes: (roles) => apiNodeReader({ socket, roles }),
    },
    call as unknown as Parameters<typeof streamHealthCheck>[1],
  );
  return call.lines;
}

test("two real etcd members: etcd healthy, members consistent across nodes and on the control plane nodes", async () => {
  assert.deepEqual(await health(), [
    `discovered nodes: ["127.0.0.1" "127.0.0.2"]`,
    "waiting for etcd to be healthy: ...",
    "waiting for etcd to be healthy: OK",
    "waiting for etcd members to be consistent across nodes: ...",
    "waiting for etcd members to be consistent across nodes: OK",
    "waiting for etcd members to be control plane nodes: ...",
    "waiting for etcd members to be control plane nodes: OK",
  ]);
});

test("the member lists the checks compared are the members' exact 64-bit IDs", async () => {
  const reader = apiNodeReader({ socket, roles: ["os:reader"] });
  try {
    const c = await a.client();
    const fromEtcd = (await c.memberList()).members.map((m) => m.id.toString()).sort();
    c.close();
    for (const address of addresses) {
      const { hostname, members } = await reader.etcdMembers(address, new AbortController().signal);
      assert.equal(hostname, address);
      assert.deepEqual(members.map((m) => m.id).sort(), fromEtcd);
      assert.deepEqual(members.map((m) => m.hostname).sort(), ["cp-a", "cp-b"]);
    }
  } finally {
    reader.close();
  }
});

test("this node alone: healthDeps reads the etcd service and the member list directly, and the etcd checks pass", async () => {
  const etcd: EtcdApiContext = {
    machineType: () => "controlplane",
    state: a.state,
    paths: a.paths,
    clientPort: a.ports.client,
    controlPlaneEndpoints: async () => [`127.0.0.1:${a.ports.client}`],
    stopEtcd: async () => assert.fail("not stopped"),
    bootstrapEtcd: async () => assert.fail("not bootstrapped"),
  };
  const call = new ProgressCall({
    wait_timeout: { seconds: 120 },
    cluster_info: { control_plane_nodes: ["127.0.0.1"] },
  });
  const deps = healthDeps(a.state, a.supervisor, { mode: "container" }, () => undefined, {
    apidSocket: "/nonexistent/apid.sock",
    etcd,
  });
  await streamHealthCheck(
    {
      ...deps,
      isThisNode: (ip) => ip === "127.0.0.1",
      checks: defaultClusterChecks().filter((c) => c.description.startsWith("etcd ")),
    },
    call as unknown as Parameters<typeof streamHealthCheck>[1],
  );
  assert.deepEqual(call.lines, [
    `discovered nodes: ["127.0.0.1"]`,
    "waiting for etcd to be healthy: ...",
    "waiting for etcd to be healthy: OK",
    "waiting for etcd members to be consistent across nodes: ...",
    "waiting for etcd members to be consistent across nodes: OK",
    "waiting for etcd members to be control plane nodes: ...",
    "waiting for etcd members to be control plane nodes: OK",
  ]);
});
