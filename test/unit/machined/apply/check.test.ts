import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigParseError, InvalidInputError, UnimplementedError } from "../../../../agent/src/errors.js";
import {
  checkConfig,
  checkMaintenanceMode,
  type ConfigChecker,
  type ParsedConfig,
} from "../../../../agent/src/machined/apply/check.js";

const checker = (validate: string[]): ConfigChecker<ParsedConfig> => ({
  parse: (data) => {
    if (data.toString().includes("garbage")) throw new ConfigParseError("yaml: line 1: bad");
    return { completeForBoot: true, warnings: ["w1"] };
  },
  validate: () => ({ errors: validate, warnings: ["w2", "w1"] }),
});

test("parse failures become 'failed to parse config: ...'", () => {
  assert.throws(
    () => checkConfig(checker([]), Buffer.from("garbage")),
    (err: unknown) => err instanceof ConfigParseError && err.message === "failed to parse config: yaml: line 1: bad",
  );
});

test("validation failures name every problem under 'configuration validation failed'", () => {
  assert.throws(
    () =>
      checkConfig(
        checker(["machine.install.disk: required", "cluster.controlPlane.endpoint: invalid"]),
        Buffer.from("ok"),
      ),
    (err: unknown) =>
      err instanceof InvalidInputError &&
      err.message.startsWith("configuration validation failed: 2 errors occurred:") &&
      err.message.includes("machine.install.disk") &&
      err.message.includes("cluster.controlPlane.endpoint"),
  );
});

test("valid configs return merged warnings", () => {
  assert.deepEqual(checkConfig(checker([]), Buffer.from("ok")).warnings, ["w1", "w2"]);
});

test("maintenance accepts auto/reboot/try only", () => {
  for (const mode of [0, 1, 4]) assert.doesNotThrow(() => checkMaintenanceMode(mode));
  assert.throws(
    () => checkMaintenanceMode(2),
    (e: unknown) =>
      e instanceof UnimplementedError &&
      e.message === "apply configuration --mode='no-reboot' is not supported in maintenance mode",
  );
  assert.throws(() => checkMaintenanceMode(3), /--mode='staged'/);
});
