// etcd.AdvertisedPeerController against a fake local member: peer URLs follow EtcdSpec's
// advertised addresses while etcd runs healthy (Talos v1.7.6 advertised_peer.go).
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import {
  AdvertisedPeerController,
  type LocalPeerAccess,
} from "../../../../agent/src/controllers/etcd/advertised-peer.js";
import {
  ETCD_NAMESPACE,
  EtcdPKIStatusId,
  EtcdPKIStatusType,
  EtcdSpecId,
  EtcdSpecType,
  type EtcdSpecSpec,
} from "../../../../agent/src/resources/catalog/etcd.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import { networkDefinitions } from "../../../../agent/src/resources/catalog/network.js";
import { RUNTIME_NAMESPACE, ServiceType } from "../../../../agent/src/resources/catalog/runtime.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { until } from "../secrets/wait.js";

class FakeMember implements LocalPeerAccess {
  reads = 0;
  readonly updates: { id: bigint; peerURLs: string[] }[] = [];
  constructor(public peerURLs: string[]) {}
  async get() {
    this.reads++;
    return { id: 0xfeedn, peerURLs: this.peerURLs };
  }
  async update(id: bigint, peerURLs: string[]) {
    this.updates.push({ id, peerURLs });
    this.peerURLs = peerURLs;
  }
}

function setup(t: TestContext, member: FakeMember) {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 10, maxBackoffMs: 50 });
  runtime.register(new AdvertisedPeerController(member));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  const spec = (advertisedAddresses: string[]) =>
    state.modify<EtcdSpecSpec>(ETCD_NAMESPACE, EtcdSpecType, EtcdSpecId, "test", () => ({
      name: "cp",
      advertisedAddresses,
      listenPeerAddresses: ["::"],
      listenClientAddresses: ["::"],
      image: "etcd",
      extraArgs: {},
    }));
  const service = (running: boolean, healthy: boolean) =>
    state.modify(RUNTIME_NAMESPACE, ServiceType, "etcd", "test", () => ({ running, healthy, unknown: false }));
  const pki = () =>
    state.modify(ETCD_NAMESPACE, EtcdPKIStatusType, EtcdPKIStatusId, "test", () => ({ ready: true, version: "1" }));
  return { spec, service, pki };
}

test("the local member's peer URLs become https://<advertised>:2380 in order, IPv6 bracketed", async (t) => {
  const member = new FakeMember(["https://10.5.0.2:2380"]);
  const s = setup(t, member);
  s.pki();
  s.service(true, true);
  // Equal URLs: read, not updated.
  s.spec(["10.5.0.2"]);
  await until("the member read", () => (member.reads > 0 ? true : undefined));
  s.spec(["10.5.0.2", "fd00::2"]);
  await until("the update", () => member.updates[0]);
  assert.deepEqual(member.updates, [{ id: 0xfeedn, peerURLs: ["https://10.5.0.2:2380", "https://[fd00::2]:2380"] }]);
});
