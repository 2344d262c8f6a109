import assert from "node:assert/strict";
import { test } from "node:test";
import { ApplyMode } from "../../../../agent/src/api/enums.js";
import { generateConfigs } from "../../../../agent/src/config/generate/index.js";
import { loadConfig } from "../../../../agent/src/config/load.js";
import { InvalidInputError } from "../../../../agent/src/errors.js";
import { fieldsNeedingReboot, planApply, RebootRequiredError } from "../../../../agent/src/machined/apply/index.js";
import { readFixture } from "../../pki/fixtures.js";

const base = (
  await generateConfigs({ clusterName: "plan", endpoint: "https://10.0.0.1:6443", installDisk: "/dev/vda" })
).controlplane;
const current = loadConfig(Buffer.from(base));
const edit = (text: string) => loadConfig(Buffer.from(text));
const withHostname = edit(base.replace(/^(\s+)network: \{\}$/m, "$1network:\n$1    hostname: n1"));
const withEnv = edit(base.replace(/^machine:\n/m, "machine:\n    env:\n        A: b\n"));
const withLabelsAndDNS = edit(
  base
    .replace(/^machine:\n/m, "machine:\n    nodeLabels:\n        a: b\n")
    .replace(/(hostDNS:\n\s+enabled:) true/, "$1 false"),
);
const withEnvAndHostname = edit(
  base
    .replace(/^machine:\n/m, "machine:\n    env:\n        A: b\n")
    .replace(/^(\s+)network: \{\}$/m, "$1network:\n$1    hostname: n1"),
);
const commentsOnly = edit(`# a comment\n${base.replace(/^debug: false$/m, "debug: false # still false")}`);

const fixture = (name: string) => readFixture(`configloader/internal/decoder/${name}.yaml`);
const cpFixture = loadConfig(Buffer.from(fixture("controlplane")));

test("generated config: sections Talos applies live need no reboot; other machine fields do", () => {
  assert.deepEqual(fieldsNeedingReboot(current, withHostname), []);
  assert.deepEqual(fieldsNeedingReboot(current, withLabelsAndDNS), [], "nodeLabels and features.hostDNS apply live");
  assert.deepEqual(fieldsNeedingReboot(current, withEnv), ["machine.env"]);
  assert.deepEqual(
    fieldsNeedingReboot(current, withEnvAndHostname),
    ["machine.env"],
    "only the reboot-needing part is named",
  );
  assert.deepEqual(fieldsNeedingReboot(current, commentsOnly), [], "comments are not changes");
});

test("fixture config: machine.type, files and a non-live feature need a reboot; cluster and kubelet do not", () => {
  const text = fixture("controlplane");
  assert.match(text, /^ {4}type: controlplane/m);
  const asWorker = loadConfig(Buffer.from(text.replace(/^ {4}type: controlplane/m, "    type: worker")));
  assert.deepEqual(fieldsNeedingReboot(cpFixture, asWorker), ["machine.type"]);
  const kubelet = loadConfig(
    Buffer.from(
      text.replace("kubelet:v1.23.0", "kubelet:v1.23.1").replace("https://localhost:6443/", "https://10.5.0.2:6443/"),
    ),
  );
  assert.deepEqual(fieldsNeedingReboot(cpFixture, kubelet), []);
  assert.match(text, /^ {4}features:\n/m);
  const rbac = loadConfig(
    Buffer.from(text.replace(/^ {4}features:\n/m, "    features:\n        apidCheckExtKeyUsage: true\n")),
  );
  assert.deepEqual(fieldsNeedingReboot(cpFixture, rbac), ["machine.features.apidCheckExtKeyUsage"]);
});

test("REBOOT, STAGED, AUTO, NO_REBOOT and TRY: action, reported mode and Talos's mode_details", () => {
  const plan = (next: typeof current, mode: number, tryTimeoutMs?: number) =>
    planApply({ current, next, mode, dryRun: false, tryTimeoutMs });
  assert.deepEqual(
    [plan(withHostname, ApplyMode.REBOOT).action, plan(withHostname, ApplyMode.REBOOT).details],
    ["reboot", "Applied configuration with a reboot"],
  );
  assert.deepEqual(
    [plan(withEnv, ApplyMode.STAGED).action, plan(withEnv, ApplyMode.STAGED).details],
    ["staged", "Staged configuration to be applied after the next reboot"],
  );
  const live = plan(withHostname, ApplyMode.AUTO);
  assert.deepEqual(
    [live.action, live.mode, live.details, live.rebootFields],
    ["live", ApplyMode.NO_REBOOT, "Applied configuration without a reboot", []],
  );
  const auto = plan(withEnv, ApplyMode.AUTO);
  assert.deepEqual([auto.action, auto.mode, auto.rebootFields], ["reboot", ApplyMode.REBOOT, ["machine.env"]]);
  assert.match(
    auto.details,
    /^Applied configuration with a reboot: this config change can't be applied in immediate mode\ndiff: --- a\n\+\+\+ b\n@@ -\d+,\d+ \+\d+,\d+ @@ machine\.env\n/,
  );
  assert.doesNotMatch(auto.details, /without a reboot/);
  assert.deepEqual(
    [plan(withHostname, ApplyMode.NO_REBOOT).action, plan(withHostname, ApplyMode.NO_REBOOT).details],
    ["live", "Applied configuration without a reboot"],
  );
  const tried = plan(withHostname, ApplyMode.TRY, 90_000);
  assert.deepEqual([tried.action, tried.mode], ["try", ApplyMode.TRY]);
  assert.equal(
    tried.details,
    "Applied configuration without a reboot\nThe config is applied in 'try' mode and will be automatically reverted back in 1m30s",
  );
  assert.match(plan(withHostname, ApplyMode.TRY).details, /reverted back in 1m0s$/, "Talos's default is one minute");
});

test("NO_REBOOT and TRY of a reboot-only change are refused with Talos's text naming the field", () => {
  for (const mode of [ApplyMode.NO_REBOOT, ApplyMode.TRY]) {
    assert.throws(
      () => planApply({ current, next: withEnvAndHostname, mode, dryRun: false }),
      (err: unknown) =>
        err instanceof RebootRequiredError &&
        err instanceof InvalidInputError &&
        err.message.startsWith("this config change can't be applied in immediate mode\ndiff: --- a\n+++ b\n") &&
        /@@ machine\.env\n/.test(err.message) &&
        /\n\+ {4}env:\n\+ {8}A: b\n/.test(err.message) &&
        !err.message.includes("hostname") &&
        JSON.stringify(err.fields["fields"]) === JSON.stringify(["machine.env"]),
    );
  }
  assert.throws(
    () => planApply({ current: undefined, next: withHostname, mode: ApplyMode.NO_REBOOT, dryRun: false }),
    /^RebootRequiredError: no current config$/,
  );
  assert.throws(
    () => planApply({ current, next: withHostname, mode: 9, dryRun: false }),
    /incorrect mode '9' specified for the apply config call/,
  );
});

test("a dry run reports the decision and the real diff of the two configs", () => {
  const dry = planApply({ current, next: withHostname, mode: ApplyMode.TRY, dryRun: true });
  assert.match(
    dry.details,
    /^Dry run summary:\nApplied configuration without a reboot \(skipped in dry-run\)\.\nConfig diff:\n--- a\n\+\+\+ b\n@@ -\d+,\d+ \+\d+,\d+ @@ machine\.network/,
  );
  assert.match(dry.details, /\n- {4}network: \{\}\n\+ {4}network:\n\+ {8}hostname: n1\n/);
  assert.doesNotMatch(dry.details, /try' mode/);
  assert.equal(dry.diff, dry.details.slice(dry.details.indexOf("--- a")));
  const autoDry = planApply({ current, next: withEnv, mode: ApplyMode.AUTO, dryRun: true });
  assert.equal(autoDry.mode, ApplyMode.REBOOT);
  assert.match(
    autoDry.details,
    /^Dry run summary:\nApplied configuration with a reboot \(skipped in dry-run\)\.\nConfig diff:\n/,
  );
  assert.match(
    planApply({ current, next: withEnv, mode: ApplyMode.STAGED, dryRun: true }).details,
    /^Dry run summary:\nStaged configuration to be applied after the next reboot \(skipped in dry-run\)\./,
  );
  assert.equal(planApply({ current, next: commentsOnly, mode: ApplyMode.NO_REBOOT, dryRun: true }).diff, "No changes.");
});
