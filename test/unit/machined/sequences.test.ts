import assert from "node:assert/strict";
import { test } from "node:test";
import type { MachineRuntime } from "../../../agent/src/machined/runtime.js";
import { bootSequence, initializeSequence, installSequence, rebootSequence, resetSequence } from "../../../agent/src/machined/sequences.js";
import type { Phase } from "../../../agent/src/machined/sequencer.js";

function runtime(mode: "metal" | "container", cmdline: Record<string, string> = {}): MachineRuntime {
  // Building a sequence reads only the platform and the kernel arguments.
  return { platform: { name: mode, mode }, cmdline: new Map(Object.entries(cmdline).map(([k, v]) => [k, [v]])) } as unknown as MachineRuntime;
}

const shape = (phases: Phase[]) => phases.map((p) => `${p.name}[${p.tasks.map((t) => t.name).join(",")}]`);

test("initialize: STATE is mounted only on an installed metal node; wipe only when the kernel asks", () => {
  assert.deepEqual(shape(initializeSequence(runtime("metal"), { installed: true })), ["meta[reloadMeta]", "mountSystem[mountStatePartition]", "config[loadConfig]"]);
  assert.deepEqual(shape(initializeSequence(runtime("metal"), { installed: false })), ["config[loadConfig]"]);
  assert.deepEqual(shape(initializeSequence(runtime("container"), { installed: false })), ["config[loadConfig]"]);
  assert.deepEqual(shape(initializeSequence(runtime("metal", { "talos.experimental.wipe": "system:EPHEMERAL,STATE" }), { installed: true })), [
    "wipeDisks[wipeSystemDisk]",
    "meta[reloadMeta]",
    "mountSystem[mountStatePartition]",
    "config[loadConfig]",
  ]);
});

test("install ends in kexec after saving the config to STATE", () => {
  assert.deepEqual(shape(installSequence(runtime("metal"))), [
    "install[install]",
    "meta[reloadMeta]",
    "mountState[mountStatePartition]",
    "saveConfig[saveConfig]",
    "unmountState[unmountStatePartition]",
    "stopEverything[stopAllServices]",
    "kexec[kexecPrepare]",
  ]);
});

test("boot mounts EPHEMERAL and the overlays on metal only", () => {
  assert.deepEqual(shape(bootSequence(runtime("metal"))), [
    "saveConfig[saveConfig]",
    "ephemeral[mountEphemeralPartition]",
    "var[setupVarDirectory]",
    "overlay[mountOverlayFilesystems]",
    "logs[spillServiceLogs]",
    "startEverything[startAllServices]",
  ]);
  assert.deepEqual(shape(bootSequence(runtime("container"))), ["saveConfig[saveConfig]", "logs[spillServiceLogs]", "startEverything[startAllServices]"]);
});

test("reboot and reset stop services, unmount, then wipe and reboot or power off", () => {
  assert.deepEqual(shape(rebootSequence(runtime("metal"))), [
    "stopEverything[stopAllServices,closeServiceLogFiles]",
    "umount[unmountOverlayFilesystems]",
    "unmountSystem[unmountEphemeralPartition,unmountStatePartition]",
    "reboot[reboot]",
  ]);
  assert.deepEqual(shape(resetSequence(runtime("metal"), { labels: ["STATE", "EPHEMERAL"], reboot: true })).slice(-2), ["resetSpec[resetSystemDiskSpec]", "reboot[reboot]"]);
  assert.deepEqual(shape(resetSequence(runtime("metal"), { labels: [], reboot: false })).slice(-2), ["reset[resetSystemDisk]", "shutdown[shutdown]"]);
  assert.deepEqual(shape(resetSequence(runtime("container"), { labels: ["STATE"], reboot: true })), ["stopEverything[stopAllServices,closeServiceLogFiles]", "reset[resetSystemDisk]", "reboot[reboot]"]);
});
