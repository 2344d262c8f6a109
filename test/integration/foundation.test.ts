// The foundation end to end: the sandbox (machined + apid as real processes)
// in maintenance mode, apply-config, mutual TLS with roles, and restart.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { NodeClient, type ClientCredentials } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import {
  generateConfigs,
  issueClientCredentials,
  type GeneratedConfigs,
} from "../../agent/src/config/generate/index.js";
import { eventually, freePort, startSandbox, type SandboxProcess } from "./helpers/sandbox.js";

async function expectCode(p: Promise<unknown>, code: grpc.status, detail?: RegExp): Promise<grpc.ServiceError> {
  const err = await p.then(
    () => assert.fail(`expected gRPC status ${grpc.status[code]}`),
    (e: grpc.ServiceError) => e,
  );
  assert.equal(err.code, code, `got ${grpc.status[err.code]}: ${err.details}`);
  if (detail) assert.match(err.details, detail);
  return err;
}

/** controlplane.yaml from our gen config, with an extra line under `machine:` when given. */
function configYaml(extra = ""): string {
  return extra ? generated.controlplane.replace(/^machine:\n/m, `machine:\n${extra}\n`) : generated.controlplane;
}

let stateDir = "";
let port = 0;
let sandbox: SandboxProcess | undefined;
let generated: GeneratedConfigs;
let admin: ClientCredentials;
let reader: ClientCredentials;
let stranger: ClientCredentials;
const clients: NodeClient[] = [];

function client(credentials: ClientCredentials): NodeClient {
  const c = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials });
  clients.push(c);
  return c;
}

before(async () => {
  stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-foundation-"));
  port = await freePort();
  generated = await generateConfigs({
    clusterName: "foundation",
    endpoint: "https://127.0.0.1:6443",
    installDisk: "",
    talosconfigEndpoints: [`127.0.0.1:${port}`],
  });
  // The admin credentials are the generated talosconfig's, as a user would use them.
  const ctx = parseTalosconfig(generated.talosconfig);
  assert.deepEqual(ctx.endpoints, [`127.0.0.1:${port}`]);
  admin = { kind: "mtls", ca: ctx.ca, crt: ctx.crt, key: ctx.key };
  const readerCreds = await issueClientCredentials(generated.secrets, { roles: ["os:reader"] });
  reader = { kind: "mtls", ca: readerCreds.caPem, crt: readerCreds.certPem, key: readerCreds.keyPem };
  // A client certificate from another cluster's CA (the client itself trusts our CA).
  const other = await generateConfigs({ clusterName: "other", endpoint: "https://127.0.0.1:6443", installDisk: "" });
  const otherCreds = await issueClientCredentials(other.secrets);
  stranger = { kind: "mtls", ca: ctx.ca, crt: otherCreds.certPem, key: otherCreds.keyPem };
  sandbox = startSandbox(stateDir, port);
});

after(async () => {
  for (const c of clients) c.close();
  await sandbox?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

test("maintenance mode: disks and COSI reads without credentials, Version refused", async () => {
  const insecure = client({ kind: "insecure" });
  const disks = (await eventually(() => insecure.disks())) as { messages: { disks: { device_name: string }[] }[] };
  assert.equal(disks.messages.length, 1);
  assert.ok(Array.isArray(disks.messages[0]!.disks));
  // Served from machined's process, as Talos's maintenance service; the console names where to apply a config once it listens.
  const out = await eventually(async () => {
    const text = sandbox!.output();
    if (!text.includes("entering maintenance service")) throw new Error("no maintenance banner yet");
    return text;
  });
  assert.ok(
    out.indexOf("api listener ready") >= 0 &&
      out.indexOf("api listener ready") < out.indexOf("entering maintenance service"),
    "banner after the listener",
  );
  assert.doesNotMatch(out, /service\[apid\]\(Running\): Process/);

  const namespaces = (await insecure.resourceList("meta", "Namespaces.meta.cosi.dev")) as {
    resource: { metadata: { id: string } };
  }[];
  assert.ok(namespaces.map((r) => r.resource.metadata.id).includes("config"));

  await expectCode(insecure.version(), grpc.status.UNIMPLEMENTED, /not implemented in maintenance mode/);
  await expectCode(
    insecure.resourceList("secrets", "MaintenanceServiceCertificates.secrets.talos.dev"),
    grpc.status.PERMISSION_DENIED,
  );
  await expectCode(
    insecure.unary(insecure.time, "Time"),
    grpc.status.UNIMPLEMENTED,
    /unknown service time.TimeService/,
  );
  await expectCode(insecure.serviceList(), grpc.status.UNIMPLEMENTED);

  const gen = (await insecure.generateConfiguration({
    config_version: "v1alpha1",
    cluster_config: { name: "gen", control_plane: { endpoint: "https://10.0.0.1:6443" } },
    machine_config: { type: 2 },
  })) as { messages: { data: Buffer[]; talosconfig: Buffer }[] };
  assert.match(gen.messages[0]!.data[0]!.toString(), /type: controlplane/);
  await expectCode(
    insecure.generateConfiguration({
      cluster_config: { name: "gen", control_plane: { endpoint: "https://10.0.0.1:6443" } },
      machine_config: { type: 3 },
    }),
    grpc.status.UNKNOWN,
    /join config can't be generated in the maintenance mode/,
  );
});

test("maintenance mode: bad configurations are refused naming the problem, nothing is stored", async () => {
  const insecure = client({ kind: "insecure" });
  await eventually(() => insecure.disks());
  const configFile = path.join(stateDir, "system", "state", "config.yaml");

  await expectCode(
    insecure.applyConfiguration("version: v1alpha1\nmachine: [unclosed"),
    grpc.status.UNKNOWN,
    /^failed to parse config: .*yaml/,
  );
  await expectCode(
    insecure.applyConfiguration(configYaml("    bogusField: 1")),
    grpc.status.UNKNOWN,
    /failed to parse config: .*machine\.bogusField/,
  );
  await expectCode(
    insecure.applyConfiguration(configYaml().replace("rbac: true", "rbac: maybe")),
    grpc.status.UNKNOWN,
    /failed to parse config: .*machine\.features\.rbac/,
  );
  // Several invalid values: every one is named.
  const invalid = configYaml()
    .replace("endpoint: https://127.0.0.1:6443", "endpoint: not-a-url")
    .replace("persist: true", "persist: false");
  const err = await expectCode(
    insecure.applyConfiguration(invalid),
    grpc.status.INVALID_ARGUMENT,
    /^configuration validation failed: /,
  );
  assert.match(err.details, /2 errors occurred/);
  assert.match(err.details, /cluster\.controlPlane\.endpoint: invalid controlplane endpoint/);
  assert.match(err.details, /\.persist should be enabled/);
  await expectCode(
    insecure.applyConfiguration(configYaml(), { mode: 2 }),
    grpc.status.UNIMPLEMENTED,
    /--mode='no-reboot' is not supported in maintenance mode/,
  );

  const dry = (await insecure.applyConfiguration(configYaml(), { dryRun: true })) as {
    messages: { mode_details: string }[];
  };
  assert.match(dry.messages[0]!.mode_details, /^Dry run summary:/);
  assert.equal(existsSync(configFile), false, "nothing may be stored by refused or dry-run applies");
});

test("apply-config leaves maintenance; mTLS with roles; other CAs refused", async () => {
  const insecure = client({ kind: "insecure" });
  await eventually(() => insecure.disks());
  const text = configYaml();
  await insecure.applyConfiguration(text);
  assert.equal(readFileSync(path.join(stateDir, "system", "state", "config.yaml"), "utf8"), text);

  const adminClient = client(admin);
  const version = (await eventually(() => adminClient.version())) as {
    messages: { version: { tag: string }; features: { rbac: boolean } }[];
  };
  assert.match(version.messages[0]!.version.tag, /^v1\.7\.\d+\+basalt\./);
  assert.equal(version.messages[0]!.features.rbac, true);

  const services = (await adminClient.serviceList()) as { messages: { services: { id: string; state: string }[] }[] };
  const byId = new Map(services.messages[0]!.services.map((s) => [s.id, s.state]));
  assert.equal(byId.get("machined"), "Running");
  assert.equal(byId.get("apid"), "Running");
  // Out of maintenance, apid is a process of its own.
  assert.match(sandbox!.output(), /service\[apid\]\(Running\): Process/);

  const mc = (await adminClient.resourceGet("config", "MachineConfigs.config.talos.dev", "v1alpha1")) as {
    resource: { spec: { yaml_spec: string } };
  };
  assert.equal(mc.resource.spec.yaml_spec, text);

  // Normal mode: an admin re-applies (no-reboot) and dry-runs.
  const again = (await adminClient.applyConfiguration(text, { mode: 2 })) as { messages: { mode_details: string }[] };
  assert.equal(again.messages[0]!.mode_details, "Applied configuration without a reboot");
  const dryNormal = (await adminClient.applyConfiguration(text, { dryRun: true })) as {
    messages: { mode_details: string }[];
  };
  assert.match(
    dryNormal.messages[0]!.mode_details,
    /^Dry run summary:\nApplied configuration without a reboot \(skipped in dry-run\)[\s\S]*No changes\./,
  );
  await expectCode(
    adminClient.applyConfiguration("garbage: [", { dryRun: true }),
    grpc.status.UNKNOWN,
    /failed to parse config/,
  );

  // GenerateConfiguration in normal mode joins this cluster: same OS CA as the applied config.
  const joined = (await adminClient.generateConfiguration({
    cluster_config: { name: "foundation", control_plane: { endpoint: "https://127.0.0.1:6443" } },
    machine_config: { type: 3 },
  })) as { messages: { data: Buffer[] }[] };
  const caLine = (yaml: string) => yaml.match(/^ {4}ca:\n {8}crt: (\S+)/m)?.[1];
  assert.ok(caLine(text));
  assert.equal(caLine(joined.messages[0]!.data[0]!.toString()), caLine(text));

  const readerClient = client(reader);
  await readerClient.version();
  await expectCode(readerClient.applyConfiguration(text), grpc.status.PERMISSION_DENIED, /not authorized/);
  await expectCode(
    readerClient.resourceGet("config", "MachineConfigs.config.talos.dev", "v1alpha1"),
    grpc.status.PERMISSION_DENIED,
  );

  await assert.rejects(
    client(stranger).version(),
    (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.UNAUTHENTICATED,
  );
});

test("restart keeps the configuration and boots straight into normal mode", async () => {
  await sandbox!.stop();
  sandbox = startSandbox(stateDir, port);
  const adminClient = client(admin);
  const version = (await eventually(() => adminClient.version())) as { messages: unknown[] };
  assert.equal(version.messages.length, 1);
  assert.doesNotMatch(sandbox.output(), /entering maintenance service/);
});
