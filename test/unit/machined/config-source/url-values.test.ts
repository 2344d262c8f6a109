import assert from "node:assert/strict";
import { test } from "node:test";
import { NotFoundError } from "../../../../agent/src/errors.js";
import {
  downloadUrlCodeTag,
  firstHardwareAddr,
  urlValues,
} from "../../../../agent/src/machined/config-source/url-values.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  HostnameStatusId,
  HostnameStatusType,
  LinkStatusType,
} from "../../../../agent/src/resources/catalog/network.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { networkDefinitions } from "../../../../agent/src/controllers/network/index.js";

function link(state: ResourceState, id: string, spec: { type: string; kind: string; hardwareAddr: string }) {
  state.modify("network", LinkStatusType, id, "test", () => spec as never);
}

test("values come from SMBIOS, the first physical link, the hostname and META 0x0b; missing ones are waited for", () => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const src = {
    state,
    identity: () => ({ uuid: "4c4c4544-0000", serial: "SN1" }),
    meta: (tag: number) => (tag === downloadUrlCodeTag ? "c0de" : undefined),
  };
  assert.deepEqual(urlValues(["uuid", "serial", "code"], src), { uuid: "4c4c4544-0000", serial: "SN1", code: "c0de" });
  assert.throws(
    () => urlValues(["mac", "hostname"], src),
    (e) => e instanceof NotFoundError && e.message === "waiting for URL variables: mac, hostname",
  );
  link(state, "lo", { type: "loopback", kind: "", hardwareAddr: "00:00:00:00:00:00" });
  link(state, "veth0", { type: "ether", kind: "veth", hardwareAddr: "aa:aa:aa:aa:aa:aa" });
  link(state, "eth1", { type: "ether", kind: "", hardwareAddr: "52:54:00:00:00:02" });
  link(state, "eth0", { type: "ether", kind: "", hardwareAddr: "52:54:00:00:00:01" });
  assert.equal(firstHardwareAddr(state), "52:54:00:00:00:01");
  state.modify(
    "network",
    HostnameStatusType,
    HostnameStatusId,
    "test",
    () => ({ hostname: "talos-abc", domainname: "" }) as never,
  );
  assert.deepEqual(urlValues(["mac", "hostname", "code"], { ...src, meta: () => undefined }), {
    mac: "52:54:00:00:00:01",
    hostname: "talos-abc",
    code: "",
  });
});
