// The metal disk image as a VM user gets it: metal-amd64.raw.zst decompressed into a
// 10 GiB qcow2. Its first boot fetches the configuration from talos.config=
// http://10.0.2.2:<port>/${uuid} (served here, QEMU's -uuid filled in), serves mutual TLS
// and grows EPHEMERAL to the disk's end; it then boots from the disk alone under UEFI and
// under BIOS with its stored config. A second copy boots the nocloud platform from a
// cidata seed disk (user-data, meta-data, and a network-config v2 whose link is named by
// MAC: a static address beside DHCP, a route and a nameserver in the platform layer).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { test } from "node:test";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import {
  artifactsPresent,
  bootNode,
  outDir,
  repoRoot,
  systemPartitionNames,
  waitFor,
  type BootedNode,
} from "./qemu.js";

const bootMs = 600_000;
const image = path.join(repoRoot, "_out", "metal-amd64.raw.zst");
const MiB = 1024 * 1024;
const diskBytes = 10 * 1024 * MiB;
// EPHEMERAL starts after the first MiB and EFI 100, BIOS 1, BOOT 1000, META 1, STATE 100 MiB; it ends
// before the backup GPT (33 sectors) at the disk's end.
const ephemeralFirstLba = (1203 * MiB) / 512;
const ephemeralSectors = diskBytes / 512 - 34 - ephemeralFirstLba + 1;

type ResourceReply = { resource: { spec: { yaml_spec: string } } };
type MountsReply = { messages: { stats: { filesystem: string; size: number; mounted_on: string }[] }[] };

/** The image decompressed into a qcow2 grown to 10 GiB (the disk a VM user would make of it). */
function diskFromImage(name: string): void {
  fs.mkdirSync(outDir, { recursive: true });
  const raw = path.join(outDir, `${name}.raw`);
  const qcow2 = path.join(outDir, `${name}.qcow2`);
  execFileSync("zstd", ["-q", "-d", "-f", image, "-o", raw]);
  execFileSync("qemu-img", ["convert", "-q", "-f", "raw", "-O", "qcow2", raw, qcow2]);
  execFileSync("qemu-img", ["resize", "-q", qcow2, String(diskBytes)]);
  fs.rmSync(raw);
}

async function expectEphemeralGrown(c: ReturnType<BootedNode["mtlsClient"]>) {
  assert.equal(Number((await c.read("/sys/class/block/vda6/size")).toString().trim()), ephemeralSectors);
  // The last mount on /var is the one in use (init's tmpfs lies under it).
  const varMount = ((await c.mounts()) as MountsReply).messages[0]!.stats.filter((m) => m.mounted_on === "/var").at(-1);
  assert.equal(varMount?.filesystem, "/dev/vda6");
  // xfs keeps part of its partition for the log and metadata (~1 % here); not grown, it would be 100 MiB.
  assert.ok(
    Number(varMount.size) > 0.97 * ephemeralSectors * 512 && Number(varMount.size) <= ephemeralSectors * 512,
    `/var is ${varMount.size} bytes`,
  );
}

test("disk image: talos.config= URL on first boot, EPHEMERAL grown, UEFI and BIOS disk boots; nocloud seed", {
  skip: artifactsPresent() && fs.existsSync(image) ? false : "image not built (npm run image)",
  timeout: 60 * 60_000,
}, async (t) => {
  const generated = await generateConfigs({
    clusterName: "disk-image",
    endpoint: "https://10.0.2.15:6443",
    installDisk: "/dev/vda",
  });
  const creds = parseTalosconfig(generated.talosconfig);
  const uuid = randomUUID();
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? "");
    if (req.url === `/${uuid}`) res.writeHead(200).end(generated.controlplane);
    else res.writeHead(404).end("unknown machine");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  const port = (server.address() as AddressInfo).port;

  const disk = "disk-image";
  diskFromImage(disk);
  let node = await bootNode({
    name: "disk-image-1-config-url",
    boot: "pxe",
    disk,
    freshDisk: false,
    uuid,
    netOpen: true,
    append: `talos.config=http://10.0.2.2:${port}/\${uuid}`,
  });
  t.after(() => node.stop({ removeDisk: true }));

  await t.test(
    "the first boot fetches its configuration by UUID and serves mutual TLS with EPHEMERAL grown to the disk",
    async () => {
      const c = node.mtlsClient(creds);
      await waitFor(node, "mTLS with the fetched configuration", () => c.version(), bootMs);
      assert.deepEqual(requests, [`/${uuid}`]);
      assert.match(node.console(), /machine configuration loaded from the platform/);
      assert.match(node.console(), /EPHEMERAL grown to the end of the disk/);
      assert.deepEqual(await systemPartitionNames(c, "vda"), ["EFI", "BIOS", "BOOT", "META", "STATE", "EPHEMERAL"]);
      await expectEphemeralGrown(c);
      const metadata = (await c.resourceGet(
        "runtime",
        "PlatformMetadatas.talos.dev",
        "platformmetadata",
      )) as ResourceReply;
      assert.equal(metadata.resource.spec.yaml_spec, `platform: metal\ninstanceId: ${uuid}\n`);
    },
  );

  for (const firmware of ["uefi", "bios"] as const) {
    await t.test(`the disk alone boots under ${firmware.toUpperCase()} with its stored configuration`, async () => {
      await node.stop({ removeDisk: false });
      node = await bootNode({ name: `disk-image-2-${firmware}`, boot: "disk", firmware, disk, freshDisk: false });
      const c = node.mtlsClient(creds);
      await waitFor(node, `mTLS after a ${firmware} boot from the disk image`, () => c.version(), bootMs);
      assert.match(node.console(), /loaded stored configuration/);
      assert.doesNotMatch(node.console(), /EPHEMERAL grown/);
      await expectEphemeralGrown(c);
    });
  }

  await t.test(
    "nocloud: a cidata seed disk's user-data configures the node, meta-data names it, network-config adds its address, route and nameserver",
    async () => {
      await node.stop({ removeDisk: true });
      const seedDir = path.join(outDir, "nocloud-seed");
      fs.rmSync(seedDir, { recursive: true, force: true });
      fs.mkdirSync(seedDir, { recursive: true });
      fs.writeFileSync(path.join(seedDir, "user-data"), generated.controlplane);
      fs.writeFileSync(path.join(seedDir, "meta-data"), "instance-id: iid-basalt-e2e\nlocal-hostname: nocloud-node\n");
      // QEMU's first NIC has MAC 52:54:00:12:34:56; `lan0` is not its name in the guest.
      fs.writeFileSync(
        path.join(seedDir, "network-config"),
        "version: 2\nethernets:\n  lan0:\n    match:\n      macaddress: '52:54:00:12:34:56'\n    dhcp4: true\n    addresses: [10.0.2.50/24]\n" +
          "    nameservers:\n      addresses: [10.0.2.3]\n    routes:\n      - to: 192.0.2.0/24\n        via: 10.0.2.2\n",
      );
      const seed = path.join(outDir, "nocloud-seed.iso");
      execFileSync("xorriso", ["-as", "mkisofs", "-quiet", "-V", "cidata", "-J", "-r", "-o", seed, seedDir]);
      t.after(() => {
        fs.rmSync(seed, { force: true });
        fs.rmSync(seedDir, { recursive: true, force: true });
      });
      diskFromImage("disk-image-nocloud");
      node = await bootNode({
        name: "disk-image-3-nocloud",
        boot: "pxe",
        disk: "disk-image-nocloud",
        freshDisk: false,
        seed,
        append: "talos.platform=nocloud",
      });
      const c = node.mtlsClient(creds);
      await waitFor(node, "mTLS with the nocloud configuration", () => c.version(), bootMs);
      const metadata = (await c.resourceGet(
        "runtime",
        "PlatformMetadatas.talos.dev",
        "platformmetadata",
      )) as ResourceReply;
      assert.equal(
        metadata.resource.spec.yaml_spec,
        "platform: nocloud\nhostname: nocloud-node\ninstanceId: iid-basalt-e2e\n",
      );
      assert.match(node.console(), /machine configuration loaded from the platform .*nocloud/);

      type Listed = { resource: { metadata: { id: string }; spec: { yaml_spec: string } } }[];
      const list = async (ns: string, type: string) =>
        new Map(
          ((await c.resourceList(ns, type)) as Listed).map(
            (r) => [r.resource.metadata.id, r.resource.spec.yaml_spec] as const,
          ),
        );
      // Go's YAML quotes a MAC (YAML 1.1 would read it as a base-60 number).
      const lan = [...(await list("network", "LinkStatuses.net.talos.dev"))].find(([, y]) =>
        /^hardwareAddr: "?52:54:00:12:34:56"?$/m.test(y),
      )?.[0];
      assert.ok(lan, "the NIC with QEMU's MAC");
      await waitFor(
        node,
        "network-config's address and route beside the DHCP lease",
        async () => {
          const addresses = await list("network", "AddressStatuses.net.talos.dev");
          assert.ok(
            addresses.has(`${lan}/10.0.2.50/24`) && addresses.has(`${lan}/10.0.2.15/24`),
            [...addresses.keys()].join(" "),
          );
          const routes = await list("network", "RouteStatuses.net.talos.dev");
          assert.ok(routes.has("inet4/10.0.2.2/192.0.2.0/24/1024"), [...routes.keys()].join(" "));
        },
        60_000,
      );
      const operators = [...(await list("network-config", "OperatorSpecs.net.talos.dev")).keys()];
      assert.ok(
        operators.includes(`platform/dhcp4/${lan}`) && !operators.includes(`default/dhcp4/${lan}`),
        operators.join(" "),
      );
      assert.equal(
        (await list("network-config", "ResolverSpecs.net.talos.dev")).get("platform/resolvers"),
        "dnsServers:\n    - 10.0.2.3\nlayer: platform\n",
      );
    },
  );
});
