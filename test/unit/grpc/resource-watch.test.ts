// stateFeed: what apid inside machined follows, read from machined's state in the protobuf shape
// the COSI feed decodes (the fields apid reads: hostname, addresses as NetIPPrefix bytes).
import assert from "node:assert/strict";
import { test } from "node:test";
import { decode, encode } from "../../../agent/src/api/index.js";
import { stateFeed } from "../../../agent/src/grpc/resource-watch.js";
import {
  hostnameStatusDefinition,
  HostnameStatusId,
  HostnameStatusType,
  NETWORK_NAMESPACE,
  nodeAddressDefinition,
  NodeAddressIds,
  NodeAddressType,
} from "../../../agent/src/resources/catalog/network.js";
import { ResourceState } from "../../../agent/src/resources/state.js";

const owner = "test";

test("stateFeed gives the current spec, every change, and undefined while the resource does not exist", () => {
  const state = new ResourceState();
  const ac = new AbortController();
  const seen: (Record<string, unknown> | undefined)[] = [];
  const hostname = {
    namespace: NETWORK_NAMESPACE,
    type: HostnameStatusType,
    id: HostnameStatusId,
    definition: hostnameStatusDefinition,
  };
  stateFeed(state).follow(hostname, ac.signal, (spec) => seen.push(spec));
  state.modify(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId, owner, () => ({
    hostname: "a",
    domainname: "",
  }));
  state.modify(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId, owner, () => ({
    hostname: "b",
    domainname: "lan",
  }));
  state.destroy(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId, { owner });
  ac.abort();
  state.modify(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId, owner, () => ({
    hostname: "c",
    domainname: "",
  }));
  assert.deepEqual(seen, [
    undefined,
    { hostname: "a", domainname: "" },
    { hostname: "b", domainname: "lan" },
    undefined,
  ]);
});

test("stateFeed's spec holds what the COSI feed decodes from the same resource", () => {
  const state = new ResourceState();
  const ac = new AbortController();
  const spec = { addresses: ["10.0.2.15/24", "fd00::5/64"] };
  state.modify(NETWORK_NAMESPACE, NodeAddressType, NodeAddressIds.current, owner, () => spec);
  let got: Record<string, unknown> | undefined;
  stateFeed(state).follow(
    {
      namespace: NETWORK_NAMESPACE,
      type: NodeAddressType,
      id: NodeAddressIds.current,
      definition: nodeAddressDefinition,
    },
    ac.signal,
    (s) => (got = s),
  );
  ac.abort();
  const overCosi = decode(
    nodeAddressDefinition.protoSpecType,
    encode(nodeAddressDefinition.protoSpecType, nodeAddressDefinition.toProto(spec)),
  );
  assert.deepEqual(got, overCosi);
});
