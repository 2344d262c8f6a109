// Apply modes on the real sandbox beyond what lifecycle.test.ts covers: AUTO resolved
// to NO_REBOOT (live) and to REBOOT (dry run), and a TRY confirmed by a later apply,
// which then survives its timeout.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { ApplyMode } from "../../agent/src/api/enums.js";
import { NodeClient } from "../../agent/src/client/client.js";
import { eventually, type SandboxProcess } from "./helpers/sandbox.js";
import { startConfiguredSandbox } from "./helpers/configured-sandbox.js";

const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-apply-modes-"));
const configFile = path.join(stateDir, "system", "state", "config.yaml");
let sandbox: SandboxProcess;
let config = "";
let client: NodeClient;
type Reply = { messages: { mode_details: string; mode: number }[] };
type Resource = { resource: { spec: { yaml_spec: string } } };
const hostname = async () =>
  ((await client.resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname")) as Resource).resource.spec
    .yaml_spec;
const withHostname = (name: string) => config.replace(/^(\s+)network: \{\}$/m, `$1network:\n$1    hostname: ${name}`);

before(async () => {
  ({
    sandbox,
    config,
    admin: client,
  } = await startConfiguredSandbox({ clusterName: "apply-modes", stateDir, args: ["--apid-in-process"] }));
});

after(async () => {
  client.close();
  await sandbox.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

test("AUTO applies a live-applicable change without a reboot, and reports a reboot for one that needs it", async () => {
  const live = (await client.applyConfiguration(withHostname("auto-node"), { mode: ApplyMode.AUTO })) as Reply;
  assert.deepEqual(
    [live.messages[0]!.mode, live.messages[0]!.mode_details],
    [ApplyMode.NO_REBOOT, "Applied configuration without a reboot"],
  );
  await eventually(async () => assert.match(await hostname(), /hostname: auto-node/));
  assert.equal(readFileSync(configFile, "utf8"), withHostname("auto-node"));

  const withEnv = withHostname("auto-node").replace(/^machine:\n/m, "machine:\n    env:\n        A: b\n");
  const dry = (await client.applyConfiguration(withEnv, { mode: ApplyMode.AUTO, dryRun: true })) as Reply;
  assert.equal(dry.messages[0]!.mode, ApplyMode.REBOOT);
  assert.match(
    dry.messages[0]!.mode_details,
    /^Dry run summary:\nApplied configuration with a reboot \(skipped in dry-run\)\.\nConfig diff:\n--- a\n\+\+\+ b\n@@ [^\n]* @@ machine\.env\n/,
  );
  assert.match(dry.messages[0]!.mode_details, /\n\+ {4}env:\n\+ {8}A: b\n/);
});

test("a TRY confirmed by a NO_REBOOT apply is kept past its timeout", async () => {
  const tried = withHostname("tried-node");
  const reply = (await client.unary(client.machine, "ApplyConfiguration", {
    data: Buffer.from(tried),
    mode: ApplyMode.TRY,
    try_mode_timeout: { seconds: 2 },
  })) as Reply;
  assert.match(reply.messages[0]!.mode_details, /reverted back in 2s$/);
  await eventually(async () => assert.match(await hostname(), /hostname: tried-node/));
  const confirmed = (await client.applyConfiguration(tried, { mode: ApplyMode.NO_REBOOT })) as Reply;
  assert.equal(confirmed.messages[0]!.mode_details, "Applied configuration without a reboot");
  await sleep(3_000);
  assert.match(await hostname(), /hostname: tried-node/, "not reverted after the try timeout");
  assert.equal(readFileSync(configFile, "utf8"), tried, "the confirming apply stored it");
});
