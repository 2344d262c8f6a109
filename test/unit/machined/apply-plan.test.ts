import assert from "node:assert/strict";
import { test } from "node:test";
import { ApplyMode } from "../../../agent/src/api/enums.js";
import { loadConfig } from "../../../agent/src/config/load.js";
import { generateConfigs } from "../../../agent/src/config/generate/index.js";
import { configDiff, fieldsNeedingReboot, planApply } from "../../../agent/src/machined/apply-plan.js";

const base = (await generateConfigs({ clusterName: "plan", endpoint: "https://10.0.0.1:6443", installDisk: "/dev/vda" })).controlplane;
const current = loadConfig(Buffer.from(base));
const withHostname = loadConfig(Buffer.from(base.replace(/^(\s+)network: \{\}$/m, "$1network:\n$1    hostname: n1")));
const withEnv = loadConfig(Buffer.from(base.replace(/^machine:\n/m, "machine:\n    env:\n        A: b\n")));
const labelsText = base.replace(/^machine:\n/m, "machine:\n    nodeLabels:\n        a: b\n").replace(/(hostDNS:\n\s+enabled:) true/, "$1 false");
assert.match(labelsText, /hostDNS:\n\s+enabled: false/);
const withLabels = loadConfig(Buffer.from(labelsText));

test("network, time and the cluster section apply live; other machine fields need a reboot", () => {
  assert.deepEqual(fieldsNeedingReboot(current, withHostname), []);
  assert.deepEqual(fieldsNeedingReboot(current, withEnv), [".machine.env"]);
  assert.deepEqual(fieldsNeedingReboot(current, withLabels), [], "nodeLabels and features.hostDNS apply live");
});

test("each mode's action and Talos's mode_details", () => {
  assert.deepEqual(planApply({ current, next: withHostname, mode: ApplyMode.NO_REBOOT, dryRun: false }), { action: "live", mode: ApplyMode.NO_REBOOT, details: "Applied configuration without a reboot" });
  assert.throws(() => planApply({ current, next: withEnv, mode: ApplyMode.NO_REBOOT, dryRun: false }), /can't be applied in immediate mode\ndiff: \.machine\.env/);
  assert.equal(planApply({ current, next: withEnv, mode: ApplyMode.AUTO, dryRun: false }).action, "reboot");
  assert.equal(planApply({ current, next: withHostname, mode: ApplyMode.AUTO, dryRun: false }).mode, ApplyMode.NO_REBOOT);
  assert.deepEqual(planApply({ current, next: withEnv, mode: ApplyMode.STAGED, dryRun: false }), { action: "staged", mode: ApplyMode.STAGED, details: "Staged configuration to be applied after the next reboot" });
  assert.equal(planApply({ current, next: withEnv, mode: ApplyMode.REBOOT, dryRun: false }).details, "Applied configuration with a reboot");
  assert.equal(planApply({ current, next: withEnv, mode: ApplyMode.AUTO, dryRun: false }).details, "Applied configuration with a reboot: this config change can't be applied in immediate mode\ndiff: .machine.env");
  assert.throws(() => planApply({ current, next: withEnv, mode: ApplyMode.TRY, dryRun: false }), /can't be applied in immediate mode/);
  assert.deepEqual(planApply({ current, next: withHostname, mode: ApplyMode.TRY, dryRun: false, tryTimeoutMs: 90_000 }), {
    action: "try",
    mode: ApplyMode.TRY,
    details: "Applied configuration without a reboot\nThe config is applied in 'try' mode and will be automatically reverted back in 1m30s",
  });
});

test("a dry run shows what would happen and the config diff", () => {
  const plan = planApply({ current, next: withHostname, mode: ApplyMode.NO_REBOOT, dryRun: true });
  assert.match(plan.details, /^Dry run summary:\nApplied configuration without a reboot \(skipped in dry-run\)\.\nConfig diff:\n--- a\n\+\+\+ b\n/);
  assert.match(plan.details, /\n-    network: \{\}\n\+    network:\n\+        hostname: n1\n/);
  assert.equal(configDiff("a\n", "a\n"), "No changes.");
});
