import assert from "node:assert/strict";
import { test } from "node:test";
import { decode } from "../../../agent/src/api/index.js";
import { resolveType } from "../../../agent/src/client/cli.js";
import { AdjtimeStatusController, adjtimeStatusSpec } from "../../../agent/src/controllers/time/adjtime-status.js";
import { InvalidInputError } from "../../../agent/src/errors.js";
import { catalogDefinitions, registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import { networkDefinitions } from "../../../agent/src/resources/catalog/network.js";
import {
  adjtimeStatusDefinition,
  AdjtimeStatusType,
  type AdjtimeStatusSpec,
  RUNTIME_NAMESPACE,
} from "../../../agent/src/resources/catalog/runtime.js";
import { ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { encodeSpec } from "../../../agent/src/resources/definitions.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { FakeClock } from "../../../agent/src/sys/clock-fake.js";
import { KernelClock, kernelStateOf } from "../../../agent/src/sys/clock-kernel.js";

test("struct timex as adjtimex fills it: offset, freq, error bounds, status and constant at their LP64 offsets", () => {
  const buf = Buffer.alloc(208);
  buf.writeBigInt64LE(-1500n, 8);
  buf.writeBigInt64LE(655360n, 16);
  buf.writeBigInt64LE(1200n, 24);
  buf.writeBigInt64LE(300n, 32);
  buf.writeInt32LE(0x2001, 40);
  buf.writeBigInt64LE(7n, 48);
  assert.deepEqual(kernelStateOf(0, buf), {
    state: 0,
    offset: -1500,
    freq: 655360,
    maxErrorUs: 1200,
    estErrorUs: 300,
    status: 0x2001,
    constant: 7,
  });
});

test("this host's kernel clock state reads without changing it; an unsynchronized clock is TIME_ERROR, as the kernel reports it", () => {
  const k = KernelClock.load().kernelState();
  assert.equal((k.status & 0x40) !== 0 ? k.state : 5, 5);
  assert.ok(k.constant >= 0 && k.constant <= 10, `constant ${k.constant}`);
});

test("AdjtimeStatus as Talos derives it: offset scaled by STA_NANO, frequency ratio, error bounds, status labels in its order, YAML and proto", () => {
  const synced = adjtimeStatusSpec({
    state: 0,
    offset: -1500,
    freq: 655360,
    maxErrorUs: 1200,
    estErrorUs: 300,
    status: 0x2001,
    constant: 7,
  });
  assert.deepEqual(synced, {
    offsetNs: -1500,
    frequencyAdjustmentRatio: 1.00001,
    maxErrorNs: 1_200_000,
    estErrorNs: 300_000,
    status: "STA_PLL | STA_NANO",
    constant: 7,
    syncStatus: true,
    state: "TIME_OK",
  });
  assert.equal(
    adjtimeStatusDefinition.toYaml!(synced),
    "offset: -1.5µs\nfrequencyAdjustmentRatio: 1.00001\nmaxError: 1.2ms\nestError: 300µs\nstatus: STA_PLL | STA_NANO\nconstant: 7\nsyncStatus: true\nstate: TIME_OK\n",
  );
  const p = decode("talos.resource.definitions.time.AdjtimeStatusSpec", encodeSpec(adjtimeStatusDefinition, synced));
  assert.deepEqual(p, {
    offset: { seconds: 0, nanos: -1500 },
    frequency_adjustment_ratio: 1.00001,
    max_error: { seconds: 0, nanos: 1_200_000 },
    est_error: { seconds: 0, nanos: 300_000 },
    status: "STA_PLL | STA_NANO",
    constant: 7,
    sync_status: true,
    state: "TIME_OK",
  });
  // Microseconds without STA_NANO; the kernel's state at boot.
  const boot = adjtimeStatusSpec({
    state: 5,
    offset: 2,
    freq: 0,
    maxErrorUs: 16_000_000,
    estErrorUs: 16_000_000,
    status: 0x40,
    constant: 2,
  });
  assert.deepEqual(
    [boot.offsetNs, boot.frequencyAdjustmentRatio, boot.status, boot.syncStatus, boot.state],
    [2000, 1, "STA_UNSYNC", false, "TIME_ERROR"],
  );
  assert.equal(
    adjtimeStatusSpec({ ...{ offset: 0, freq: 0, maxErrorUs: 0, estErrorUs: 0, status: 0, constant: 0 }, state: 9 })
      .state,
    "TIME_UNKNOWN",
  );
});

test("the controller publishes AdjtimeStatus node from the clock it is given", async (t) => {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const runtime = new ControllerRuntime(state);
  const clock = new FakeClock();
  runtime.register(new AdjtimeStatusController(clock));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  await runtime.whenIdle();
  assert.deepEqual(state.get<AdjtimeStatusSpec>(RUNTIME_NAMESPACE, AdjtimeStatusType, "node")?.spec, {
    offsetNs: 0,
    frequencyAdjustmentRatio: 1,
    maxErrorNs: 16e9,
    estErrorNs: 16e9,
    status: "STA_UNSYNC",
    constant: 2,
    syncStatus: false,
    state: "TIME_ERROR",
  });
});

test("`as` and `rs` are ambiguous as on Talos v1.7, between the same types (cosi's capital-letter aliases)", () => {
  const defs = [...catalogDefinitions, ...networkDefinitions].map((d) => ({
    id: d.id,
    type: d.spec.type,
    displayType: d.spec.displayType,
    defaultNamespace: d.spec.defaultNamespace,
    allAliases: d.spec.allAliases,
  }));
  const ambiguousBetween = (word: string): string[] => {
    try {
      return [resolveType(defs, word).type];
    } catch (err) {
      assert.ok(
        err instanceof InvalidInputError && err.message.startsWith(`resource type "${word}" is ambiguous: `),
        String(err),
      );
      return err.message.split(": ")[1]!.split(", ").sort();
    }
  };
  assert.deepEqual(ambiguousBetween("as"), [
    "AddressSpecs.net.talos.dev",
    "AddressStatuses.net.talos.dev",
    "AdjtimeStatuses.v1alpha1.talos.dev",
  ]);
  assert.deepEqual(ambiguousBetween("rs"), [
    "ResolverSpecs.net.talos.dev",
    "ResolverStatuses.net.talos.dev",
    "RouteSpecs.net.talos.dev",
    "RouteStatuses.net.talos.dev",
  ]);
  assert.deepEqual(ambiguousBetween("adjtimestatus"), ["AdjtimeStatuses.v1alpha1.talos.dev"]);
});
