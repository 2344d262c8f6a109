import assert from "node:assert/strict";
import { test } from "node:test";
import type { MachineRuntime } from "../../../agent/src/machined/runtime.js";
import {
  bootSequence,
  initializeSequence,
  installSequence,
  rebootSequence,
  resetSequence,
  shutdownSequence,
  stageUpgradeSequence,
  type ResetOptions,
} from "../../../agent/src/machined/sequences.js";
import type { Phase } from "../../../agent/src/machined/sequencer.js";

function runtime(mode: "metal" | "container", cmdline: Record<string, string> = {}): MachineRuntime {
  // Building a sequence reads only the platform and the kernel arguments.
  return {
    platform: { name: mode, mode },
    cmdline: new Map(Object.entries(cmdline).map(([k, v]) => [k, [v]])),
  } as unknown as MachineRuntime;
}

const shape = (phases: Phase[]) => phases.map((p) => `${p.name}[${p.tasks.map((t) => t.name).join(",")}]`);

test("initialize: STATE is mounted only on an installed metal node; wipe only when the kernel asks", () => {
  assert.deepEqual(shape(initializeSequence(runtime("metal"), { installed: true })), [
    "meta[reloadMeta]",
    "mountSystem[mountStatePartition]",
    "config[loadConfig]",
  ]);
  assert.deepEqual(shape(initializeSequence(runtime("metal"), { installed: false })), ["config[loadConfig]"]);
  assert.deepEqual(shape(initializeSequence(runtime("container"), { installed: false })), ["config[loadConfig]"]);
  assert.deepEqual(
    shape(
      initializeSequence(runtime("metal", { "talos.experimental.wipe": "system:EPHEMERAL,STATE" }), {
        installed: true,
      }),
    ),
    ["wipeDisks[wipeSystemDisk]", "meta[reloadMeta]", "mountSystem[mountStatePartition]", "config[loadConfig]"],
  );
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

test("boot shares the root's mounts, mounts EPHEMERAL and the overlays on metal only", () => {
  assert.deepEqual(shape(bootSequence(runtime("metal"))), [
    "saveConfig[saveConfig]",
    "env[setUserEnvVars]",
    "dbus[startDBus]",
    "sharedFilesystems[setupSharedFilesystems]",
    "ephemeral[mountEphemeralPartition]",
    "var[setupVarDirectory]",
    "overlay[mountOverlayFilesystems]",
    "logs[spillServiceLogs]",
    "userSetup[writeUserFiles]",
    "startEverything[startAllServices]",
  ]);
  assert.deepEqual(shape(bootSequence(runtime("container"))), [
    "saveConfig[saveConfig]",
    "env[setUserEnvVars]",
    "dbus[startDBus]",
    "logs[spillServiceLogs]",
    "userSetup[writeUserFiles]",
    "startEverything[startAllServices]",
  ]);
});

const reset = (o: Partial<ResetOptions>): ResetOptions => ({
  labels: [],
  reboot: true,
  mode: "all",
  userDisks: [],
  graceful: false,
  ...o,
});
// Talos's phases before anything stops: the kubelet's graceful shutdown and the pods, then the system bus.
const cleanup = ["cleanup[stopAllPods]", "dbus[stopDBus]"];

test("reboot stops the pods, services, unmounts, then kexecs on metal; POWERCYCLE and the container reboot through the firmware", () => {
  const stops = [
    "stopEverything[stopAllServices,closeServiceLogFiles]",
    "umount[unmountOverlayFilesystems,unmountPodMounts]",
    "unmountSystem[unmountEphemeralPartition,unmountStatePartition]",
  ];
  assert.deepEqual(shape(rebootSequence(runtime("metal"))), [...cleanup, ...stops, "kexec[kexecPrepare]"]);
  assert.deepEqual(shape(rebootSequence(runtime("metal"), { powercycle: true })), [
    ...cleanup,
    ...stops,
    "reboot[reboot]",
  ]);
  assert.deepEqual(shape(rebootSequence(runtime("container"))), [
    ...cleanup,
    "stopEverything[stopAllServices,closeServiceLogFiles]",
    "reboot[reboot]",
  ]);
});

test("shutdown and a staged upgrade stop the pods first, on metal and in a container", () => {
  for (const mode of ["metal", "container"] as const) {
    assert.deepEqual(shape(shutdownSequence(runtime(mode))).slice(0, 3), [
      ...cleanup,
      "stopEverything[stopAllServices,closeServiceLogFiles]",
    ]);
    assert.deepEqual(shape(stageUpgradeSequence(runtime(mode))).slice(0, 3), [
      ...cleanup,
      "stopEverything[stopAllServices,closeServiceLogFiles]",
    ]);
  }
});

test("reset on metal stops the pods, or removes them when graceful; a container resets without", () => {
  assert.deepEqual(shape(resetSequence(runtime("metal"), reset({}))).slice(0, 3), [
    ...cleanup,
    "stopEverything[stopAllServices,closeServiceLogFiles]",
  ]);
  assert.deepEqual(shape(resetSequence(runtime("metal"), reset({ graceful: true }))).slice(0, 3), [
    "cleanup[removeAllPods]",
    "dbus[stopDBus]",
    "stopEverything[stopAllServices,closeServiceLogFiles]",
  ]);
  assert.deepEqual(
    shape(resetSequence(runtime("container"), reset({ graceful: true })))[0],
    "stopEverything[stopAllServices,closeServiceLogFiles]",
  );
});

test("reset: labels wipe partitions and kexec; the whole system disk reboots through the firmware; the mode picks system or user disks", () => {
  assert.deepEqual(shape(resetSequence(runtime("metal"), reset({ labels: ["STATE", "EPHEMERAL"] }))).slice(5), [
    "resetSpec[resetSystemDiskSpec]",
    "kexec[kexecPrepare]",
  ]);
  assert.deepEqual(shape(resetSequence(runtime("metal"), reset({ reboot: false }))).slice(5), [
    "reset[resetSystemDisk]",
    "shutdown[shutdown]",
  ]);
  assert.deepEqual(shape(resetSequence(runtime("metal"), reset({}))).slice(5), [
    "reset[resetSystemDisk]",
    "reboot[reboot]",
  ]);
  assert.deepEqual(shape(resetSequence(runtime("metal"), reset({ userDisks: ["/dev/vdb"] }))).slice(5), [
    "reset[resetSystemDisk]",
    "resetUserDisks[resetUserDisks]",
    "reboot[reboot]",
  ]);
  assert.deepEqual(
    shape(resetSequence(runtime("metal"), reset({ mode: "userDisks", userDisks: ["/dev/vdb"] }))).slice(5),
    ["resetUserDisks[resetUserDisks]", "reboot[reboot]"],
  );
  assert.deepEqual(shape(resetSequence(runtime("metal"), reset({ mode: "userDisks" }))).slice(5), ["reboot[reboot]"]);
  assert.deepEqual(shape(resetSequence(runtime("metal"), reset({ mode: "systemDisk", labels: ["STATE"] }))).slice(5), [
    "resetSpec[resetSystemDiskSpec]",
    "kexec[kexecPrepare]",
  ]);
  assert.deepEqual(shape(resetSequence(runtime("container"), reset({ labels: ["STATE"] }))), [
    "stopEverything[stopAllServices,closeServiceLogFiles]",
    "reset[resetSystemDisk]",
    "reboot[reboot]",
  ]);
  assert.deepEqual(shape(resetSequence(runtime("container"), reset({ mode: "userDisks" }))), [
    "stopEverything[stopAllServices,closeServiceLogFiles]",
    "reboot[reboot]",
  ]);
});
