import assert from "node:assert/strict";
import { test } from "node:test";
import { readyForTrial } from "../../../agent/src/machined/upgrade-trial.js";
import type { MachineStatusSpec } from "../../../agent/src/resources/catalog/runtime.js";

const status = (...unmet: [string, string][]): MachineStatusSpec => ({
  stage: "running",
  status: { ready: unmet.length === 0, unmetConditions: unmet.map(([name, reason]) => ({ name, reason })) },
});

test("an upgraded system passes its trial without time sync or Kubernetes, not without its own services or network", () => {
  assert.equal(readyForTrial(status()), true);
  assert.equal(readyForTrial(status(["time", "time is not synced"])), true);
  assert.equal(
    readyForTrial(
      status(
        ["services", "etcd not running, kubelet not healthy"],
        ["staticPods", "kube-system/kube-apiserver-cp pending"],
      ),
    ),
    true,
  );
  assert.equal(readyForTrial(status(["services", "kubelet not running, trustd not running"])), false);
  assert.equal(readyForTrial(status(["services", "apid not healthy"])), false);
  assert.equal(readyForTrial(status(["network", "waiting on: address"])), false);
});
