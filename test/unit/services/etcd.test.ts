import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import type { EtcdSpecSpec } from "../../../agent/src/resources/catalog/etcd.js";
import { etcdArgs, EtcdExtraArgError } from "../../../agent/src/services/definitions/etcd-args.js";
import { etcdProcess } from "../../../agent/src/services/definitions/etcd.js";
import { etcdImageProcess } from "../../../agent/src/services/definitions/etcd-image.js";
import { etcdPaths } from "../../../agent/src/sys/etcd/paths.js";
import { nodePaths } from "../../../agent/src/sys/paths.js";

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../test/fixtures/etcd");
const fixture = (name: string) => readFileSync(path.join(fixtures, name), "utf8").trim().split("\n");
const spec = JSON.parse(readFileSync(path.join(fixtures, "spec.json"), "utf8")) as EtcdSpecSpec;
const paths = etcdPaths(nodePaths);
const base = { spec, dataDir: paths.dataDir, pkiDir: paths.pkiDir };

test("etcd's flags are Talos's, sorted, for each way a start forms the cluster", () => {
  assert.deepEqual(etcdArgs({ ...base, mode: { kind: "new" } }), fixture("controlplane-bootstrap.args"));
  assert.deepEqual(etcdArgs({ ...base, mode: { kind: "existing" } }), fixture("controlplane-existing.args"));
  assert.deepEqual(
    etcdArgs({
      ...base,
      mode: { kind: "join", initialCluster: "cp-0=https://10.5.0.1:2380,cp-1=https://10.5.0.2:2380" },
    }),
    fixture("controlplane-join.args"),
  );
  assert.deepEqual(etcdArgs({ ...base, mode: { kind: "existing" }, init: true }), fixture("init-existing.args"));
});

test("extraArgs may set the cluster-forming flags but not the fixed ones", () => {
  const withExtra = (extraArgs: Record<string, string>) =>
    etcdArgs({ ...base, spec: { ...spec, extraArgs }, mode: { kind: "new" } });
  const args = withExtra({
    "initial-cluster": "a=https://1.2.3.4:2380",
    "advertise-client-urls": "https://1.2.3.4:2379",
  });
  assert.ok(args.includes("--initial-cluster=a=https://1.2.3.4:2380"));
  assert.ok(args.includes("--advertise-client-urls=https://1.2.3.4:2379"));
  assert.equal(args.filter((a) => a.startsWith("--initial-cluster=")).length, 1);
  for (const key of [
    "data-dir",
    "name",
    "listen-client-urls",
    "cert-file",
    "peer-trusted-ca-file",
    "experimental-initial-corrupt-check",
  ]) {
    assert.throws(
      () => withExtra({ [key]: "x" }),
      (err: unknown) => err instanceof EtcdExtraArgError && err.message === `extra arg "${key}" is not allowed`,
    );
  }
});

test("IPv6 addresses are bracketed in etcd's URLs", () => {
  const v6: EtcdSpecSpec = {
    ...spec,
    extraArgs: {},
    advertisedAddresses: ["fd00::2"],
    listenPeerAddresses: ["::"],
    listenClientAddresses: ["::"],
  };
  const args = etcdArgs({ ...base, spec: v6, mode: { kind: "new" } });
  assert.ok(args.includes("--initial-cluster=cp-1=https://[fd00::2]:2380"));
  assert.ok(args.includes("--listen-client-urls=https://[::]:2379"));
});

test("etcdProcess: the image, Talos's mounts, user 60, host network and env", () => {
  const p = etcdProcess(spec, { mode: { kind: "new" }, paths, env: ["http_proxy=http://proxy:3128"], arch: "arm64" });
  assert.equal(p.image, "gcr.io/etcd-development/etcd:v3.5.13");
  assert.equal(p.containerdNamespace, "system");
  assert.deepEqual(p.args, ["/usr/local/bin/etcd", ...fixture("controlplane-bootstrap.args")]);
  assert.deepEqual(p.mounts, [
    { type: "bind", destination: "/system/secrets/etcd", source: "/system/secrets/etcd", options: ["rbind", "ro"] },
    { type: "bind", destination: "/var/lib/etcd", source: "/var/lib/etcd", options: ["rbind", "rw"] },
  ]);
  assert.deepEqual(p.user, { uid: 60, gid: 60 });
  assert.equal(p.hostNetwork, true);
  assert.equal(p.oomScoreAdj, -998);
  assert.deepEqual(p.env.slice(0, 2), ["http_proxy=http://proxy:3128", "ETCD_UNSUPPORTED_ARCH=arm64"]);
  assert.match(p.env[2]!, /^ETCD_CIPHER_SUITES=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,/);
  assert.equal(etcdProcess(spec, { mode: { kind: "new" }, paths }).env.length, 1);
});

test("etcd from its image: Talos's process over the image, no capabilities, host files", () => {
  const proc = etcdProcess(spec, { mode: { kind: "existing" }, paths });
  const held = new Set(["CAP_SYS_ADMIN"]);
  const p = etcdImageProcess(proc, {
    hostFiles: { hosts: "/etc/hosts", resolvConf: "/system/resolved/resolv.conf" },
    heldCapabilities: held,
  });
  assert.deepEqual(p, {
    args: proc.args,
    env: proc.env,
    user: { uid: 60, gid: 60 },
    capabilities: [],
    readonlyRootfs: false,
    mounts: proc.mounts,
    hostFiles: { hosts: "/etc/hosts", resolvConf: "/system/resolved/resolv.conf" },
    heldCapabilities: held,
    oomScoreAdj: -998,
  });
});
