// etcd in a configured control-plane sandbox, through machined's API over mutual TLS: the etcd
// resources and PKI our controllers make from the config, and Bootstrap's refusal of a data
// directory that is not empty.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import type { NodeClient } from "../../agent/src/client/client.js";
import { startConfiguredSandbox, type ConfiguredSandbox } from "./helpers/configured-sandbox.js";
import { eventually } from "./helpers/sandbox.js";

let cp: ConfiguredSandbox;
let stateDir: string;

before(async () => {
  stateDir = mkdtempSync(path.join(os.tmpdir(), "etcd-sandbox-"));
  cp = await startConfiguredSandbox({ clusterName: "etcd-sandbox", stateDir, args: ["--apid-in-process"] });
});
after(async () => {
  cp?.admin.close();
  await cp?.sandbox.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

async function spec(admin: NodeClient, namespace: string, type: string, id: string): Promise<string> {
  const res = await admin.resourceGet(namespace, type, id);
  return (res as { resource: { spec: { yaml_spec: string } } }).resource.spec.yaml_spec;
}

test("the control plane's etcd resources and PKI come from its config", async () => {
  const { admin, generated } = cp;
  const root = await eventually(() => spec(admin, "secrets", "EtcdRootSecrets.secrets.talos.dev", "etcd"));
  assert.ok(root.includes(`crt: ${Buffer.from(generated.secrets.certs.etcd.crt).toString("base64")}`));
  const config = await eventually(() => spec(admin, "etcd", "EtcdConfigs.etcd.talos.dev", "etcd"));
  assert.equal(
    config,
    "advertiseExcludeSubnets: []\nlistenExcludeSubnets: []\nimage: gcr.io/etcd-development/etcd:v3.5.13\nextraArgs: {}\n",
  );
  const etcdSpec = await eventually(() => spec(admin, "etcd", "EtcdSpecs.etcd.talos.dev", "etcd"));
  assert.match(
    etcdSpec,
    /^name: \S+\nadvertisedAddresses:\n    - \S+\nlistenPeerAddresses:\n    - (0\.0\.0\.0|'::')\n/,
  );
  await eventually(() => spec(admin, "secrets", "EtcdSecrets.secrets.talos.dev", "etcd"));
  const status = await eventually(() => spec(admin, "etcd", "PKIStatuses.etcd.talos.dev", "etcd"));
  assert.match(status, /^ready: true\nversion: "?\d+"?\n$/);
  const pki = path.join(stateDir, "system", "secrets", "etcd");
  assert.deepEqual((await readdir(pki)).sort(), [
    "admin.crt",
    "admin.key",
    "ca.crt",
    "ca.key",
    "peer.crt",
    "peer.key",
    "server.crt",
    "server.key",
  ]);
  assert.equal((await stat(path.join(pki, "server.key"))).mode & 0o777, 0o400);
});

test("Bootstrap refuses a data directory that is not empty; the etcd calls reach for the local member", async () => {
  const { admin } = cp;
  const data = path.join(stateDir, "var", "lib", "etcd");
  mkdirSync(path.join(data, "member"), { recursive: true });
  writeFileSync(path.join(data, "member", "x"), "");
  await assert.rejects(admin.unary(admin.machine, "Bootstrap"), (err: grpc.ServiceError) => {
    assert.equal(err.code, grpc.status.ALREADY_EXISTS);
    assert.equal(err.details, "etcd data directory is not empty");
    return true;
  });
  // The etcd calls reach the (absent) local member: an etcd error, not Unimplemented.
  await assert.rejects(
    admin.unary(admin.machine, "EtcdStatus", {}, 5000),
    (err: grpc.ServiceError) => err.code !== grpc.status.UNIMPLEMENTED,
  );
});
