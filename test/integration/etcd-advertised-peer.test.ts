// etcd.AdvertisedPeerController against a real etcd v3.5.13: when EtcdSpec's advertised
// addresses change, the running member's peer URLs in etcd's member list follow them.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { AdvertisedPeerController, localPeerAccess } from "../../agent/src/controllers/etcd/advertised-peer.js";
import { ETCD_NAMESPACE, EtcdSpecId, EtcdSpecType, type EtcdSpecSpec } from "../../agent/src/resources/catalog/etcd.js";
import { ControllerRuntime } from "../../agent/src/resources/controller-runtime.js";
import { adminTls } from "../../agent/src/sys/etcd/client.js";
import { etcdBinaries, etcdNode, etcdRoot, type EtcdNode } from "./helpers/etcd-node.js";

let node: EtcdNode;
const ac = new AbortController();

before(async () => {
  node = await etcdNode({ name: "cp-peer", root: await etcdRoot(), binaries: etcdBinaries() });
  void node.startWaiting();
  await node.until("Preparing", false);
  await node.call("Bootstrap");
  await node.until("Running");
});
after(async () => {
  ac.abort();
  await node?.close();
});

async function peerURLs(): Promise<string[]> {
  const c = await node.client();
  try {
    const { header, members } = await c.memberList();
    return members.find((m) => m.id === header.memberId)!.peerURLs;
  } finally {
    c.close();
  }
}

test("the member's peer URLs follow the advertised addresses", async () => {
  const port = node.ports.peer;
  assert.deepEqual(await peerURLs(), [`https://127.0.0.1:${port}`]);
  const runtime = new ControllerRuntime(node.state, { initialBackoffMs: 100, maxBackoffMs: 500 });
  runtime.register(
    new AdvertisedPeerController(
      localPeerAccess(() => adminTls(node.paths.pkiDir), `127.0.0.1:${node.ports.client}`),
      port,
    ),
  );
  runtime.start(ac.signal);
  node.state.modify<EtcdSpecSpec>(ETCD_NAMESPACE, EtcdSpecType, EtcdSpecId, "test.Node", (s) => ({
    ...s!,
    advertisedAddresses: ["127.0.0.1", "127.0.0.2"],
  }));
  for (let i = 0; i < 300; i++) {
    if ((await peerURLs()).length === 2) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(await peerURLs(), [`https://127.0.0.1:${port}`, `https://127.0.0.2:${port}`]);
  // The member keeps serving.
  const c = await node.client();
  try {
    await c.validateQuorum();
  } finally {
    c.close();
  }
});
