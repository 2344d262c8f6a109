// etcd that will not start once bootstrapped, against a real etcd v3.5.13: a flag etcd does not know
// in the config's cluster.etcd.extraArgs (EtcdSpec) makes it exit at once. The node is not locked out:
// the service waits to restart with Talos's event and console line, etcd's own words are in its log,
// the etcd calls answer with an error instead of hanging, and with the spec fixed a second Bootstrap
// starts a healthy member, as Talos's bootstrap sequence replaces the etcd service.
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { after, before, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { addLogTap } from "../../agent/src/log.js";
import { ETCD_NAMESPACE, EtcdSpecId, EtcdSpecType, type EtcdSpecSpec } from "../../agent/src/resources/catalog/etcd.js";
import { etcdBinaries, etcdNode, etcdRoot, type EtcdNode } from "./helpers/etcd-node.js";

let node: EtcdNode;
const consoleLines: string[] = [];
let untap: () => void;

before(async () => {
  node = await etcdNode({ name: "cp-1", root: await etcdRoot(), binaries: etcdBinaries() });
  untap = addLogTap((line) => consoleLines.push(line));
});
after(async () => {
  untap?.();
  await node?.close();
});

/** What applying a config with these cluster.etcd.extraArgs does to EtcdSpec. */
function setExtraArgs(extraArgs: Record<string, string>): void {
  node.state.modify<EtcdSpecSpec>(ETCD_NAMESPACE, EtcdSpecType, EtcdSpecId, "test.Node", (spec) => ({
    ...spec!,
    extraArgs,
  }));
}

const restartEvent = /^Error running .+, going to restart forever: /;

test("a flag etcd does not know: the service waits to restart, with an event, a console line and etcd's words in its log", async () => {
  setExtraArgs({ "no-such-flag": "1" });
  assert.deepEqual(await node.call("Bootstrap"), { messages: [{ metadata: null }] });
  const waiting = await new Promise<string>((resolve) => {
    const check = () => {
      const s = node.supervisor.get("etcd");
      const event = s?.events.at(-1);
      if (s?.state === "Waiting" && event && restartEvent.test(event.msg)) {
        off();
        resolve(event.msg);
      }
    };
    const off = node.supervisor.onChange(check);
    check();
  });
  assert.ok(
    consoleLines.some((l) => l.includes(`service[etcd](Waiting): ${waiting}`)),
    `no console line for "${waiting}"`,
  );
  const log = node.supervisor.logs
    .read("etcd", -1)
    .lines.map((l) => l.toString())
    .join("\n");
  assert.match(log, /flag provided but not defined: -no-such-flag/);
  // etcd stopped at its flags, before making a member: its data directory is empty, so Bootstrap may run again.
  assert.deepEqual(await readdir(node.paths.dataDir), []);
  // The etcd calls answer with the connection's error rather than wait.
  await assert.rejects(node.call("EtcdMemberList", { query_local: true }), (err: grpc.ServiceError) => {
    assert.equal(err.code, grpc.status.UNKNOWN, err.details);
    assert.match(err.details, /connect ECONNREFUSED 127\.0\.0\.1:\d+/);
    return true;
  });
});

test("with the spec fixed, Bootstrap again starts a healthy one-member etcd", async () => {
  setExtraArgs({});
  assert.deepEqual(await node.call("Bootstrap"), { messages: [{ metadata: null }] });
  await node.until("Running");
  const members = (await node.call("EtcdMemberList", { query_local: true })) as {
    messages: { members: { hostname: string }[] }[];
  };
  assert.deepEqual(
    members.messages[0]!.members.map((m) => m.hostname),
    ["cp-1"],
  );
});
