// A metal node in maintenance mode (machined and apid in this process, its disks a fake sysfs: no
// host disk is ever touched) refuses, through the API, a configuration whose install disk it could
// not install to: the ISO's drive, a missing path, a read-only disk. Nothing is stored and the node
// stays in maintenance; Disks lists what Talos's disk list does.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { NodeClient } from "../../agent/src/client/client.js";
import { networkDefinitions } from "../../agent/src/cmd/networking.js";
import { configChecker, cosiFactory } from "../../agent/src/cmd/wiring.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { startMachined, type Machined } from "../../agent/src/machined/machined.js";
import {
  MachineStatusId,
  MachineStatusType,
  RUNTIME_NAMESPACE,
  type MachineStatusSpec,
} from "../../agent/src/resources/catalog/runtime.js";
import { fakeBlockSysfs } from "../../agent/src/sys/block.js";
import { kernelModulesRecorded } from "../../agent/src/sys/kernel-modules.js";
import { kernelParamsOverlay } from "../../agent/src/sys/kernel-params.js";
import { pathsAt } from "../../agent/src/sys/paths.js";
import { eventually, freePort } from "./helpers/sandbox.js";

const platform = { name: "metal", mode: "metal" } as const;
// Device names no host has: were a refusal to fail, the install would find nothing to open.
const block = fakeBlockSysfs(
  {
    "vdq/size": "20971520",
    "vdq/queue/rotational": "1",
    "vdr/size": "2048",
    "vdr/ro": "1",
    "sr0/size": "614400",
    "sr0/ro": "1",
  },
  {},
  { "/dev/vdq1": "/dev/vdq1" },
);
const refuse = (reason: string) => () => Promise.reject(new Error(`the test refuses ${reason}`));

const stateDir = mkdtempSync(path.join(os.tmpdir(), `basalt-install-disk-${process.pid}-`));
const ac = new AbortController();
let machined: Machined;
let client: NodeClient;
let configFor: (disk: string) => Promise<string>;

before(async () => {
  const port = await freePort();
  machined = await startMachined({
    paths: pathsAt(stateDir),
    platform,
    block,
    mounter: {
      mount: refuse("mounts"),
      unmount: refuse("unmounts"),
      makeShared: refuse("shared mounts"),
      list: () => [],
    },
    power: { request: refuse("power actions"), loadKexec: refuse("kexec loads"), kexec: refuse("kexec") },
    cmdline: new Map(),
    configChecker: configChecker(platform, block),
    cosi: cosiFactory(),
    apid: {
      listen: `127.0.0.1:${port}`,
      inProcess: true,
      spec: () => {
        throw new Error("apid runs in this process");
      },
    },
    kernelParams: kernelParamsOverlay(path.join(stateDir, "kernel-params")),
    kernelModules: kernelModulesRecorded(path.join(stateDir, "kernel-modules")),
    extraDefinitions: networkDefinitions,
    signal: ac.signal,
  });
  client = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "insecure" } });
  await eventually(() => client.disks());
  configFor = async (disk) =>
    (await generateConfigs({ clusterName: "disk", endpoint: "https://10.5.0.2:6443", installDisk: disk })).controlplane;
});

after(async () => {
  client?.close();
  ac.abort();
  await machined?.done.catch(() => undefined);
  rmSync(stateDir, { recursive: true, force: true });
});

test("Disks lists the disks Talos's disk list shows: not the optical drive; a read-only disk marked so", async () => {
  const reply = (await client.disks()) as {
    messages: { disks: { device_name: string; readonly: boolean; size: string | number }[] }[];
  };
  assert.deepEqual(
    reply.messages[0]!.disks.map((d) => [d.device_name, d.readonly, Number(d.size)]),
    [
      ["/dev/vdq", false, 20971520 * 512],
      ["/dev/vdr", true, 2048 * 512],
    ],
  );
});

test("apply-config naming the ISO's drive, a partition, a missing path or a read-only disk is InvalidArgument; nothing stored, still in maintenance", async () => {
  const refusals: [string, string][] = [
    [
      "/dev/sr0",
      'specified install disk is not a disk the node can install to: "/dev/sr0" (talosctl disks lists those)',
    ],
    [
      "/dev/vdq1",
      'specified install disk is not a disk the node can install to: "/dev/vdq1" (talosctl disks lists those)',
    ],
    ["/dev/sdz", 'specified install disk does not exist: "/dev/sdz"'],
    ["/dev/vdr", 'specified install disk is read-only: "/dev/vdr"'],
  ];
  for (const [disk, problem] of refusals) {
    const config = await configFor(disk);
    for (const dryRun of [false, true]) {
      await assert.rejects(client.applyConfiguration(config, { dryRun }), (e: grpc.ServiceError) => {
        assert.equal(e.code, grpc.status.INVALID_ARGUMENT, `${disk}: ${e.message}`);
        assert.equal(
          e.details,
          `configuration validation failed: 1 error occurred:\n\t* .machine.install.disk: ${problem}\n\n`,
        );
        return true;
      });
    }
  }
  const accepted = (await client.applyConfiguration(await configFor("/dev/vdq"), { dryRun: true })) as {
    messages: { mode_details: string }[];
  };
  assert.equal(
    accepted.messages[0]!.mode_details,
    "Dry run summary:\nNode is running in maintenance mode and does not have a config yet.",
  );
  assert.equal(existsSync(path.join(stateDir, "system", "state", "config.yaml")), false, "nothing stored");
  const status = machined.state.get<MachineStatusSpec>(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId)?.spec;
  assert.equal(status?.stage, "maintenance");
});
