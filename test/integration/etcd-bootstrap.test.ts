// talosctl bootstrap and the single-member etcd calls against a real etcd v3.5.13 on loopback,
// with the PKI our controllers issue (mutual TLS) and the calls over gRPC as Talos's messages.
import assert from "node:assert/strict";
import { readdir, rm, stat } from "node:fs/promises";
import { after, before, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import {
  ETCD_NAMESPACE,
  EtcdLocalMemberId,
  EtcdMemberType,
  formatMemberId,
  type EtcdMemberSpec,
  type EtcdRootSpec,
} from "../../agent/src/resources/catalog/etcd.js";
import { addLogTap } from "../../agent/src/log.js";
import { bootstrapHint } from "../../agent/src/services/definitions/etcd-join.js";
import { etcdBinaries, etcdNode, etcdRoot, type EtcdNode } from "./helpers/etcd-node.js";

let root: EtcdRootSpec;
let binaries: { etcd: string; etcdutl: string };
let node: EtcdNode;

before(async () => {
  binaries = etcdBinaries();
  root = await etcdRoot();
  node = await etcdNode({ name: "cp-1", root, binaries });
});
after(async () => node?.close());

const grpcError = (code: grpc.status, details: string) => (err: unknown) => {
  const e = err as grpc.ServiceError;
  assert.equal(e.code, code, e.details);
  assert.equal(e.details, details);
  return true;
};

test("a worker refuses Bootstrap and the etcd calls as Talos does", async () => {
  const worker = await etcdNode({ name: "w-1", root, binaries, machineType: "worker" });
  try {
    await assert.rejects(
      worker.call("Bootstrap"),
      grpcError(grpc.status.FAILED_PRECONDITION, "bootstrap can only be performed on a control plane node"),
    );
    await assert.rejects(
      worker.call("EtcdStatus"),
      grpcError(grpc.status.UNIMPLEMENTED, "etcd status is only available on control plane nodes"),
    );
    await assert.rejects(
      worker.call("EtcdMemberList"),
      grpcError(grpc.status.UNIMPLEMENTED, "member list is only available on control plane nodes"),
    );
    await assert.rejects(
      worker.upload("EtcdRecover", [Buffer.from("x")]),
      grpcError(grpc.status.UNIMPLEMENTED, "etcd recover is only available on control plane nodes"),
    );
  } finally {
    await worker.close();
  }
});

test("a fresh control plane's etcd waits to join; Bootstrap starts a one-member cluster", async () => {
  const lines: string[] = [];
  let heard: () => void = () => undefined;
  const hinted = new Promise<void>((resolve) => (heard = resolve));
  const untap = addLogTap((line) => {
    lines.push(line);
    if (line.includes("127.0.0.1]")) heard();
  });
  void node.startWaiting();
  // No member answers (it is the first): the pre stage keeps trying to join, saying what to do.
  await hinted;
  untap();
  assert.ok(
    lines.some((l) => l.includes(bootstrapHint)),
    lines.join("\n"),
  );
  assert.ok(lines.some((l) => l.includes("[127.0.0.1]")));
  assert.equal(
    bootstrapHint,
    "etcd is waiting to join the cluster, if this node is the first node in the cluster, please run `talosctl bootstrap` against one of the following IPs:",
  );
  assert.equal(node.supervisor.get("etcd")!.state, "Preparing");
  const reply = await node.call("Bootstrap");
  assert.deepEqual(reply, { messages: [{ metadata: null }] });
  await node.until("Running");
  const events = node.supervisor.get("etcd")!.events.map((e) => `${e.state}: ${e.msg}`);
  assert.ok(events.includes("Finished: Service finished successfully"), events.join("\n"));
  assert.ok((await readdir(node.paths.dataDir)).includes("member"));
  const st = await stat(node.paths.dataDir);
  assert.equal(st.mode & 0o777, 0o700);
  assert.equal(st.uid, 60);
});

test("EtcdMemberList, EtcdStatus, alarms and defragment answer with Talos's shapes", async () => {
  const c = await node.client();
  const { members, header } = await c.memberList().finally(() => c.close());
  assert.equal(members.length, 1);
  const id = members[0]!.id.toString();
  for (const query_local of [false, true]) {
    const list = await node.call("EtcdMemberList", { query_local });
    assert.deepEqual(list, {
      messages: [
        {
          metadata: null,
          legacy_members: ["cp-1"],
          members: [
            {
              id,
              hostname: "cp-1",
              peer_urls: [`https://127.0.0.1:${node.ports.peer}`],
              client_urls: [`https://127.0.0.1:${node.ports.client}`],
              is_learner: false,
            },
          ],
        },
      ],
    });
  }
  // The local member's ID as Talos formats it.
  const member = await waitFor(
    () => node.state.get<EtcdMemberSpec>(ETCD_NAMESPACE, EtcdMemberType, EtcdLocalMemberId)?.spec,
  );
  assert.equal(member.memberID, formatMemberId(members[0]!.id));
  assert.equal(header.memberId, members[0]!.id);

  const status = (await node.call("EtcdStatus")).messages as { member_status: Record<string, unknown> }[];
  const ms = status[0]!.member_status;
  assert.equal(ms.member_id, id);
  assert.equal(ms.leader, id);
  assert.equal(ms.protocol_version, "3.5.13");
  assert.equal(ms.is_learner, false);
  assert.deepEqual(ms.errors, []);
  assert.ok(BigInt(ms.db_size as string) > 0n && BigInt(ms.db_size_in_use as string) > 0n);
  assert.ok(
    BigInt(ms.raft_index as string) > 0n &&
      BigInt(ms.raft_term as string) >= 2n &&
      BigInt(ms.raft_applied_index as string) > 0n,
  );

  assert.deepEqual(await node.call("EtcdAlarmList"), { messages: [{ metadata: null, member_alarms: [] }] });
  assert.deepEqual(await node.call("EtcdAlarmDisarm"), { messages: [{ metadata: null, member_alarms: [] }] });
  assert.deepEqual(await node.call("EtcdDefragment"), { messages: [{ metadata: null }] });
});

test("Bootstrap of a running etcd is refused: its data directory is not empty", async () => {
  await assert.rejects(
    node.call("Bootstrap"),
    grpcError(grpc.status.ALREADY_EXISTS, "etcd data directory is not empty"),
  );
  await assert.rejects(
    node.call("Bootstrap", { recover_etcd: true }),
    grpcError(grpc.status.ALREADY_EXISTS, "etcd data directory is not empty"),
  );
});

test("snapshot, wipe, recover: the key comes back byte for byte", async () => {
  const value = Buffer.from([0, 1, 2, 0xff, 0xfe, ...Buffer.from("basalt etcd snapshot \u00e9")]);
  const c = await node.client();
  await c.put("/basalt/snapshot-key", value);
  c.close();

  const chunks = await node.stream("EtcdSnapshot");
  assert.ok(chunks.length > 0);
  const snapshot = Buffer.concat(chunks.map((m) => m.bytes as Buffer));
  // A bbolt database ends with etcd's SHA-256 of the rest.
  const { createHash } = await import("node:crypto");
  assert.deepEqual(snapshot.subarray(-32), createHash("sha256").update(snapshot.subarray(0, -32)).digest());

  await node.supervisor.stop("etcd");
  await rm(node.paths.dataDir, { recursive: true, force: true });
  // Uploaded in pieces, as talosctl streams the file.
  const pieces = [snapshot.subarray(0, 1000), snapshot.subarray(1000, 70_000), snapshot.subarray(70_000)];
  assert.deepEqual(await node.upload("EtcdRecover", pieces), { messages: [{ metadata: null }] });
  assert.deepEqual(await import("node:fs/promises").then((fs) => fs.readFile(node.paths.recoverySnapshot)), snapshot);
  assert.equal((await stat(node.paths.recoverySnapshot)).mode & 0o777, 0o700);

  assert.deepEqual(await node.call("Bootstrap", { recover_etcd: true }), { messages: [{ metadata: null }] });
  await node.until("Running");
  const after = await node.client();
  try {
    assert.deepEqual((await after.get("/basalt/snapshot-key")).value, value);
    assert.equal((await after.memberList()).members.length, 1);
  } finally {
    after.close();
  }
  // The uploaded snapshot is consumed by the restore.
  await assert.rejects(stat(node.paths.recoverySnapshot), { code: "ENOENT" });
});

async function waitFor<T>(get: () => T | undefined): Promise<T> {
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}
