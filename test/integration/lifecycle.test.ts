// The node lifecycle on the sandbox platform (container mode: no disk), through the
// real sandbox process: apply modes on a running node, Read, Mounts and Dmesg, Reboot
// (the next boot starts in the same process with the stored config), Reset back to
// maintenance mode.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { ApplyMode } from "../../agent/src/api/enums.js";
import { decode } from "../../agent/src/api/index.js";
import { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { eventually, type SandboxProcess } from "./helpers/sandbox.js";
import { startConfiguredSandbox } from "./helpers/configured-sandbox.js";

const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-lifecycle-"));
const configFile = path.join(stateDir, "system", "state", "config.yaml");
let sandbox: SandboxProcess;
let port = 0;
let config = "";
let creds: { ca: string; crt: string; key: string };
const clients: NodeClient[] = [];
const insecure = () => track(new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "insecure" } }));
const admin = () => track(new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "mtls", ...creds } }));
function track(c: NodeClient) {
  clients.push(c);
  return c;
}
type Reply = { messages: { mode_details: string; mode: number }[] };

before(async () => {
  const started = await startConfiguredSandbox({ clusterName: "lifecycle", stateDir, args: ["--apid-in-process"] });
  ({ sandbox, port, config } = started);
  creds = parseTalosconfig(started.generated.talosconfig);
  track(started.admin);
});

after(async () => {
  for (const c of clients) c.close();
  await sandbox.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

test("apply modes on a running node: dry run diff, no-reboot live change, refusal naming the field, staged", async () => {
  const c = admin();
  const withHostname = config.replace(/^(\s+)network: \{\}$/m, "$1network:\n$1    hostname: lifecycle-node");
  const dry = (await c.applyConfiguration(withHostname, { mode: ApplyMode.NO_REBOOT, dryRun: true })) as Reply;
  assert.match(
    dry.messages[0]!.mode_details,
    /^Dry run summary:\nApplied configuration without a reboot \(skipped in dry-run\)\.\nConfig diff:\n--- a\n\+\+\+ b\n/,
  );
  assert.match(dry.messages[0]!.mode_details, /\+        hostname: lifecycle-node/);
  assert.equal(readFileSync(configFile, "utf8"), config, "a dry run stores nothing");

  const live = (await c.applyConfiguration(withHostname, { mode: ApplyMode.NO_REBOOT })) as Reply;
  assert.equal(live.messages[0]!.mode_details, "Applied configuration without a reboot");
  await eventually(async () => {
    const res = (await c.resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname")) as {
      resource: { spec: { yaml_spec: string } };
    };
    assert.match(res.resource.spec.yaml_spec, /hostname: lifecycle-node/);
  });

  const withEnv = withHostname.replace(/^machine:\n/m, "machine:\n    env:\n        A: b\n");
  await assert.rejects(c.applyConfiguration(withEnv, { mode: ApplyMode.NO_REBOOT }), (err: grpc.ServiceError) => {
    assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
    assert.match(
      err.details,
      /^this config change can't be applied in immediate mode\ndiff: --- a\n\+\+\+ b\n@@ [^\n]* @@ machine\.env\n/,
    );
    return true;
  });
  assert.equal(readFileSync(configFile, "utf8"), withHostname, "a refused apply stores nothing");

  const staged = (await c.applyConfiguration(withEnv, { mode: ApplyMode.STAGED })) as Reply;
  assert.equal(staged.messages[0]!.mode_details, "Staged configuration to be applied after the next reboot");
  assert.equal(readFileSync(configFile, "utf8"), withEnv, "staged: stored for the next boot");
  const active = (await c.resourceGet("config", "MachineConfigs.config.talos.dev", "v1alpha1")) as {
    resource: { spec: { yaml_spec: string } };
  };
  assert.equal(active.resource.spec.yaml_spec, withHostname, "staged: not active yet");
  config = withEnv;
});

test("try mode applies live and reverts after its timeout unless another apply comes", async () => {
  const c = admin();
  const hostnameOf = async () =>
    (
      (await c.resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname")) as {
        resource: { spec: { yaml_spec: string } };
      }
    ).resource.spec.yaml_spec;
  const active = async () =>
    (
      (await c.resourceGet("config", "MachineConfigs.config.talos.dev", "v1alpha1")) as {
        resource: { spec: { yaml_spec: string } };
      }
    ).resource.spec.yaml_spec;
  const before = await active();
  const tried = before.replace(/hostname: lifecycle-node/, "hostname: tried-node");
  assert.notEqual(tried, before);
  const reply = (await c.unary(c.machine, "ApplyConfiguration", {
    data: Buffer.from(tried),
    mode: ApplyMode.TRY,
    try_mode_timeout: { seconds: 3 },
  })) as Reply;
  assert.equal(
    reply.messages[0]!.mode_details,
    "Applied configuration without a reboot\nThe config is applied in 'try' mode and will be automatically reverted back in 3s",
  );
  await eventually(async () => assert.match(await hostnameOf(), /hostname: tried-node/));
  assert.notEqual(readFileSync(configFile, "utf8"), tried, "a tried config is not stored");
  await eventually(async () => assert.equal(await active(), before, "reverted after the timeout"));
  await eventually(async () => assert.match(await hostnameOf(), /hostname: lifecycle-node/));
});

test("Read, Mounts and Dmesg", async () => {
  const c = admin();
  assert.equal((await c.read(configFile)).toString(), config);
  await assert.rejects(
    c.read(path.join(stateDir, "missing")),
    (err: grpc.ServiceError) => err.code === grpc.status.NOT_FOUND,
  );
  await assert.rejects(
    c.read(stateDir),
    (err: grpc.ServiceError) => err.code === grpc.status.INVALID_ARGUMENT && /is a directory/.test(err.details),
  );
  const mounts = (await c.mounts()) as { messages: { stats: { mounted_on: string }[] }[] };
  assert.ok(mounts.messages[0]!.stats.some((m) => m.mounted_on === "/"));
  const kmsg = await c.collect<{ bytes: Buffer }>(c.machine, "Dmesg", { follow: false, tail: false });
  assert.ok(kmsg.length > 0, "the kernel log has records");
  assert.match(kmsg[0]!.bytes.toString(), /^\w+: +\w+: \[\d{4}-\d\d-\d\dT[\d:.]+Z\]: /);
});

type EventMsg = { data: { type_url: string; value: Buffer }; actor_id: string; id: string };
const decodeEvent = (e: EventMsg) => ({
  type: e.data.type_url,
  actor: e.actor_id,
  payload: decode(e.data.type_url.replace("talos/runtime/", ""), e.data.value),
});

test("Reboot starts the next boot with the stored (staged) configuration; Events tell what happened", async () => {
  const c = admin();
  const seen: EventMsg[] = [];
  const stream = c.machine.Events({ tail_events: 0 }, c.metadata()) as grpc.ClientReadableStream<EventMsg>;
  stream.on("data", (e: EventMsg) => seen.push(e));
  stream.on("error", () => undefined); // the stream ends when this boot's machined stops
  const reply = (await c.reboot()) as { messages: { actor_id: string }[] };
  const actor = reply.messages[0]!.actor_id;
  assert.match(actor, /^[0-9a-f-]{36}$/);
  await eventually(async () => {
    const events = seen.map(decodeEvent);
    assert.ok(
      events.some(
        (e) =>
          e.type === "talos/runtime/machine.TaskEvent" && e.actor === actor && e.payload["task"] === "stopAllServices",
      ),
      "stopAllServices under the reboot's actor id",
    );
    assert.ok(
      events.some((e) => e.type === "talos/runtime/machine.MachineStatusEvent" && e.payload["stage"] === 5),
      "stage rebooting",
    );
  });
  stream.cancel();
  await eventually(async () => assert.match(sandbox.output(), /starting the next boot in this process/));
  const next = admin();
  await eventually(async () => {
    const active = (await next.resourceGet("config", "MachineConfigs.config.talos.dev", "v1alpha1")) as {
      resource: { spec: { yaml_spec: string } };
    };
    assert.equal(active.resource.spec.yaml_spec, config, "the staged config is active after the reboot");
  });
  assert.match(sandbox.output(), /reboot sequence: done|task reboot \(1\/1\)/);
  // What a --wait tracker looks for once the node is back: the whole history of the new boot.
  // (running may first be reported with unmet conditions, as Talos does, then ready once they are met).
  const isReady = (e: ReturnType<typeof decodeEvent>) =>
    e.payload["stage"] === 4 && (e.payload["status"] as { ready?: boolean } | undefined)?.ready === true;
  const all = (
    await next.collectUntil<EventMsg>(next.machine, "Events", { tail_events: -1 }, (e) => isReady(decodeEvent(e)))
  ).map(decodeEvent);
  const running = all.find((e) => e.type === "talos/runtime/machine.MachineStatusEvent" && isReady(e));
  assert.deepEqual((running?.payload["status"] as { unmet_conditions?: unknown[] }).unmet_conditions ?? [], []);
});

test("Reset wipes the stored configuration and returns to maintenance mode", async () => {
  const c = admin();
  await c.reset({ wipe: ["STATE"], reboot: true });
  const m = insecure();
  await eventually(async () => {
    await m.disks();
    await assert.rejects(m.version(), /not implemented in maintenance mode/);
  });
  assert.throws(() => readFileSync(configFile), /ENOENT/);
});
