// Two etcd members on loopback (the second joins as a learner and is promoted, as Talos's etcd
// service joins): EtcdForfeitLeadership, EtcdLeaveCluster and EtcdRemoveMemberByID over gRPC
// against the real etcd v3.5.13.
import assert from "node:assert/strict";
import { stat } from "node:fs/promises";
import { after, before, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { etcdBinaries, etcdNode, etcdRoot, type EtcdNode } from "./helpers/etcd-node.js";

let a: EtcdNode;
let b: EtcdNode;

before(async () => {
  const binaries = etcdBinaries();
  const root = await etcdRoot();
  const peers = () => [`127.0.0.1:${a.ports.client}`, `127.0.0.1:${b.ports.client}`];
  a = await etcdNode({ name: "cp-a", root, binaries, peers });
  b = await etcdNode({ name: "cp-b", root, binaries, peers });
});
after(async () => {
  await b?.close();
  await a?.close();
});

/** Polls `check` until it holds (a cluster change lands asynchronously); bounded by attempts. */
async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function members(node: EtcdNode) {
  const c = await node.client();
  try {
    return (await c.memberList()).members;
  } finally {
    c.close();
  }
}

async function leaderId(node: EtcdNode): Promise<bigint> {
  const c = await node.client();
  try {
    return (await c.status()).leader;
  } finally {
    c.close();
  }
}

test("the second control plane joins as a learner and is promoted, past a learner an earlier attempt added", async () => {
  void a.startWaiting();
  await a.until("Preparing", false);
  await a.call("Bootstrap");
  await a.until("Running");
  // What an attempt whose answer was lost leaves behind: a learner with b's peer URL and no name yet.
  const c = await a.client();
  try {
    await c.memberAdd([`https://127.0.0.1:${b.ports.peer}`], true);
  } finally {
    c.close();
  }
  void b.startWaiting();
  await b.until("Running");
  await eventually("two voting members", async () => {
    const m = await members(a);
    return m.length === 2 && m.every((x) => !x.isLearner && x.name !== "");
  });
  const list = (await b.call("EtcdMemberList")).messages as {
    legacy_members: string[];
    members: { hostname: string; is_learner: boolean; peer_urls: string[] }[];
  }[];
  assert.deepEqual([...list[0]!.legacy_members].sort(), ["cp-a", "cp-b"]);
  assert.deepEqual(
    list[0]!.members.map((m) => m.is_learner),
    [false, false],
  );
  const peerOfB = list[0]!.members.find((m) => m.hostname === "cp-b")!.peer_urls;
  assert.deepEqual(peerOfB, [`https://127.0.0.1:${b.ports.peer}`]);
});

test("EtcdForfeitLeadership moves leadership off the leader and names the new leader; a follower forfeits nothing", async () => {
  const m = await members(a);
  const leader = await leaderId(a);
  const [leaderNode, followerNode] = m.find((x) => x.id === leader)!.name === "cp-a" ? [a, b] : [b, a];
  await eventually("both EtcdMember resources", async () =>
    [a, b].every((n) => n.state.get("etcd", "EtcdMembers.etcd.talos.dev", "local") !== undefined),
  );
  assert.deepEqual(await followerNode.call("EtcdForfeitLeadership"), { messages: [{ metadata: null, member: "" }] });
  assert.deepEqual(await leaderNode.call("EtcdForfeitLeadership"), {
    messages: [{ metadata: null, member: followerNode.name }],
  });
  const newLeader = m.find((x) => x.name === followerNode.name)!.id;
  await eventually(
    "the follower leading",
    async () => (await leaderId(a)) === newLeader && (await leaderId(b)) === newLeader,
  );
});

test("EtcdRemoveMemberByID of an unknown member is NotFound", async () => {
  await assert.rejects(a.call("EtcdRemoveMemberByID", { member_id: "1234" }), (err: grpc.ServiceError) => {
    assert.equal(err.code, grpc.status.NOT_FOUND);
    assert.equal(err.details, "failed to remove member 1234: etcdserver: member not found");
    return true;
  });
});

test("EtcdLeaveCluster removes this member, stops etcd and drops its data", async () => {
  assert.deepEqual(await b.call("EtcdLeaveCluster"), { messages: [{ metadata: null }] });
  // A read right after the leadership move may meet "leader changed"; the membership is what counts.
  await eventually("cp-a alone", async () => JSON.stringify((await members(a)).map((m) => m.name)) === '["cp-a"]');
  assert.equal(b.supervisor.get("etcd")!.state, "Finished");
  await assert.rejects(stat(b.paths.dataDir), { code: "ENOENT" });
});

test("EtcdRemoveMemberByID removes a member by its full 64-bit ID", async () => {
  const c = await a.client();
  let id: bigint;
  try {
    id = (await c.memberAdd(["https://127.0.0.1:9"], true)).member.id;
  } finally {
    c.close();
  }
  assert.equal((await members(a)).length, 2);
  assert.deepEqual(await a.call("EtcdRemoveMemberByID", { member_id: id.toString() }), {
    messages: [{ metadata: null }],
  });
  assert.deepEqual(
    (await members(a)).map((m) => m.name),
    ["cp-a"],
  );
});
