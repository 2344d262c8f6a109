import assert from "node:assert/strict";
import { test } from "node:test";
import { loadConfig } from "../../../agent/src/config/load.js";
import { InvalidInputError } from "../../../agent/src/errors.js";
import type { MachineRuntime } from "../../../agent/src/machined/runtime.js";
import { stageUpgradeSequence, upgradeSequence } from "../../../agent/src/machined/sequences.js";
import type { Phase } from "../../../agent/src/machined/sequencer.js";
import { checkUpgradeRequest, registriesOf, upgradedCmdline } from "../../../agent/src/machined/tasks/upgrade.js";

function runtime(mode: "metal" | "container"): MachineRuntime {
  // Building a sequence reads only the platform and the kernel arguments.
  return { platform: { name: mode, mode }, cmdline: new Map() } as unknown as MachineRuntime;
}
const shape = (phases: Phase[]) => phases.map((p) => `${p.name}[${p.tasks.map((t) => t.name).join(",")}]`);
const pulled = { kernel: "/var/k", initramfs: "/var/i", digest: "sha256:" + "0".repeat(64) };

test("upgrade writes the new slot, removes the pods (stops them with --preserve), stops and unmounts everything, then boots it; --stage only reboots", () => {
  assert.deepEqual(
    shape(
      upgradeSequence(runtime("metal"), pulled, {
        image: "r/i:t",
        preserve: false,
        force: false,
        rebootMode: "DEFAULT",
      }),
    ),
    [
      "upgrade[upgrade]",
      "cleanup[removeAllPods]",
      "dbus[stopDBus]",
      "stopEverything[stopAllServices,closeServiceLogFiles]",
      "umount[unmountOverlayFilesystems,unmountPodMounts]",
      "unmountSystem[unmountEphemeralPartition,unmountStatePartition]",
      "reboot[reboot]",
    ],
  );
  assert.deepEqual(
    shape(
      upgradeSequence(runtime("metal"), pulled, {
        image: "r/i:t",
        preserve: true,
        force: false,
        rebootMode: "DEFAULT",
      }),
    ).slice(1, 3),
    ["cleanup[stopAllPods]", "dbus[stopDBus]"],
  );
  assert.deepEqual(shape(stageUpgradeSequence(runtime("metal"))), [
    "cleanup[stopAllPods]",
    "dbus[stopDBus]",
    "stopEverything[stopAllServices,closeServiceLogFiles]",
    "umount[unmountOverlayFilesystems,unmountPodMounts]",
    "unmountSystem[unmountEphemeralPartition,unmountStatePartition]",
    "reboot[reboot]",
  ]);
});

test("the new slot's kernel arguments reboot on panic (so GRUB gets the node back), unless the user chose", () => {
  assert.equal(upgradedCmdline("talos.platform=metal console=ttyS0"), "talos.platform=metal console=ttyS0 panic=10");
  assert.equal(upgradedCmdline("panic=0 console=ttyS0"), "panic=0 console=ttyS0");
});

test("an upgrade request names a valid image, or it is the caller's error", () => {
  assert.equal(checkUpgradeRequest("10.0.2.2:5000/basalt/installer:v2"), "10.0.2.2:5000/basalt/installer:v2");
  assert.throws(() => checkUpgradeRequest(""), InvalidInputError);
  assert.throws(() => checkUpgradeRequest("Bad/Name"), InvalidInputError);
});

test(".machine.registries: mirrors as written, TLS PEMs and client identity decoded from base64, auth kept", () => {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const config = loadConfig(
    Buffer.from(`version: v1alpha1
machine:
  type: worker
  token: abcdef.0123456789abcdef
  ca: {crt: "", key: ""}
  registries:
    mirrors:
      docker.io: {endpoints: ["https://mirror.local"]}
    config:
      mirror.local:
        tls: {ca: ${b64("CA PEM")}, clientIdentity: {crt: ${b64("CRT PEM")}, key: ${b64("KEY PEM")}}}
        auth: {username: u, password: p}
cluster:
  controlPlane: {endpoint: "https://10.0.0.1:6443"}
`),
  );
  assert.deepEqual(registriesOf(config), {
    mirrors: { "docker.io": { endpoints: ["https://mirror.local"] } },
    config: {
      "mirror.local": {
        tls: { ca: "CA PEM", clientCert: "CRT PEM", clientKey: "KEY PEM" },
        auth: { username: "u", password: "p" },
      },
    },
  });
  assert.deepEqual(registriesOf(undefined), { config: {} });
});
