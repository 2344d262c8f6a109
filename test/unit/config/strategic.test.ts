import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidInputError } from "../../../agent/src/errors.js";
import { ConfigBundle, loadConfig, strategicMerge } from "../../../agent/src/config/index.js";
import { mergeUrl } from "../../../agent/src/config/patch/strategic.js";
import { fixture, yamlDocs } from "./fixtures.js";

function merge(left: string, right: string): string {
  const docs = strategicMerge(loadConfig(left).documents, loadConfig(right, { patch: true }).documents);
  return new ConfigBundle(docs).toCanonicalYaml();
}

const canonical = (text: string) => yamlDocs(loadConfig(text).toCanonicalYaml());

for (const n of ["001", "002", "003", "004"]) {
  test(`strategic ${n}: left + right = expected`, () => {
    const dir = `types/v1alpha1/strategic/${n}`;
    const out = merge(fixture(`${dir}/left.yaml`), fixture(`${dir}/right.yaml`));
    assert.deepEqual(yamlDocs(out), canonical(fixture(`${dir}/expected.yaml`)));
  });
}

test("strategic merge does not just return the right side", () => {
  const out = yamlDocs(
    merge(fixture("types/v1alpha1/strategic/003/left.yaml"), fixture("types/v1alpha1/strategic/003/right.yaml")),
  )[0] as {
    machine: { network: { interfaces: { interface?: string; dhcp?: boolean; addresses?: string[] }[] } };
  };
  const ifaces = out.machine.network.interfaces;
  assert.equal(ifaces.length, 3);
  assert.deepEqual(ifaces[0].addresses, ["172.20.0.2/24"]);
  assert.equal(ifaces[0].dhcp, true);
  assert.equal(ifaces[2].interface, "eth1");
});

test("URL endpoint merges component by component like Go's url.URL", () => {
  assert.equal(mergeUrl("https://127.0.0.1:6643/", "https://10.0.0.1"), "https://10.0.0.1/");
  assert.equal(mergeUrl("https://a:6443", "https://b:7443/x"), "https://b:7443/x");
});

test("scalars: zero strings do not override, false does", () => {
  const left = "version: v1alpha1\nmachine:\n  network:\n    hostname: a\n  features:\n    rbac: true\n";
  const out = yamlDocs(merge(left, 'machine:\n  network:\n    hostname: ""\n  features:\n    rbac: false\n'))[0] as {
    machine: { network: { hostname: string }; features: { rbac: boolean } };
  };
  assert.equal(out.machine.network.hostname, "a");
  assert.equal(out.machine.features.rbac, false);
});

test("plain lists append, subnets replace, vlans merge by id", () => {
  const left =
    "version: v1alpha1\nmachine:\n  certSANs: [a]\n  network:\n    interfaces:\n      - interface: eth0\n        vlans:\n          - vlanId: 5\n            addresses: [10.0.0.1/24]\ncluster:\n  network:\n    podSubnets: [10.244.0.0/16]\n";
  const right =
    "machine:\n  certSANs: [b]\n  network:\n    interfaces:\n      - interface: eth0\n        vlans:\n          - vlanId: 5\n            mtu: 1400\n          - vlanId: 6\ncluster:\n  network:\n    podSubnets: [10.0.0.0/8]\n";
  const out = loadConfig(merge(left, right)).v1alpha1()!;
  assert.deepEqual(out.machine?.certSANs, ["a", "b"]);
  assert.deepEqual(out.cluster?.network?.podSubnets, ["10.0.0.0/8"]);
  const vlans = out.machine?.network?.interfaces?.[0].vlans;
  assert.equal(vlans?.length, 2);
  assert.equal(vlans?.[0].mtu, 1400);
  assert.deepEqual(vlans?.[0].addresses, ["10.0.0.1/24"]);
});

test("$patch: delete removes keys, list items and documents; missing path is an error", () => {
  const left =
    "version: v1alpha1\nmachine:\n  network:\n    hostname: h\n    interfaces:\n      - interface: eth0\n      - interface: eth1\n---\napiVersion: v1alpha1\nkind: SideroLinkConfig\napiUrl: https://x\n";
  const right =
    "machine:\n  network:\n    hostname:\n      $patch: delete\n    interfaces:\n      - interface: eth0\n        $patch: delete\n---\napiVersion: v1alpha1\nkind: SideroLinkConfig\n$patch: delete\n";
  const out = loadConfig(merge(left, right));
  assert.deepEqual(
    out.documents.map((d) => d.kind),
    ["v1alpha1"],
  );
  assert.equal(out.v1alpha1()?.machine?.network?.hostname, undefined);
  assert.deepEqual(out.v1alpha1()?.machine?.network?.interfaces, [{ interface: "eth1" }]);

  assert.throws(
    () =>
      merge(
        "version: v1alpha1\nmachine:\n  network: {}\n",
        "machine:\n  network:\n    hostname:\n      $patch: delete\n",
      ),
    (err: unknown) =>
      err instanceof InvalidInputError &&
      err.message ===
        "patch delete: path 'machine.network.hostname' in document '/v1alpha1': failed to delete path 'machine.network.hostname': lookup failed",
  );
});

test("a patch document of a kind the config lacks is appended", () => {
  const out = loadConfig(
    merge("version: v1alpha1\n", "apiVersion: v1alpha1\nkind: EventSinkConfig\nendpoint: 10.0.0.1:3333\n"),
  );
  assert.deepEqual(
    out.documents.map((d) => d.kind),
    ["v1alpha1", "EventSinkConfig"],
  );
});
