// A cloud image as its cloud runs it: openstack-amd64.raw.xz (made from the metal disk image by
// scripts/platform-images.sh when missing or older) imported as the root disk on virtio, booted
// from that disk under UEFI with the image's own kernel command line (talos.platform=openstack),
// and a config-2 config drive made as nova makes it (genisoimage) attached as a CD-ROM. Its
// user_data configures the node (mutual TLS answers), meta_data.json names it and
// network_data.json puts DHCP on the NIC it names by MAC and a nameserver in the platform layer.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { cloudImageFile, ensureCloudImages, metalDiskImage } from "./cloud-images.js";
import { artifactsPresent, bootNode, outDir, waitFor } from "./qemu.js";

const bootMs = 600_000;
const image = cloudImageFile("openstack-amd64.raw.xz");
const instanceId = "0b7e6f3a-5d2c-4e1b-9a8f-7c6d5e4f3a2b";
// QEMU's first NIC.
const mac = "52:54:00:12:34:56";

/** The image as Glance and nova give it to the instance: raw, grown to the flavor's 4 GiB root disk, as a qcow2 for vm.sh. */
function rootDisk(name: string): void {
  fs.mkdirSync(outDir, { recursive: true });
  const raw = path.join(outDir, `${name}.raw`);
  execFileSync("sh", ["-c", 'xz -d -c -T2 "$1" >"$2"', "sh", image, raw]);
  execFileSync("qemu-img", ["convert", "-q", "-f", "raw", "-O", "qcow2", raw, path.join(outDir, `${name}.qcow2`)]);
  execFileSync("qemu-img", ["resize", "-q", path.join(outDir, `${name}.qcow2`), "4G"]);
  fs.rmSync(raw);
}

/** A config drive as nova writes one: ISO 9660 with Rock Ridge and Joliet, volume label config-2. */
function configDrive(userData: string): string {
  const dir = path.join(outDir, "config-drive");
  fs.rmSync(dir, { recursive: true, force: true });
  const latest = path.join(dir, "openstack", "latest");
  fs.mkdirSync(latest, { recursive: true });
  fs.writeFileSync(path.join(latest, "user_data"), userData);
  fs.writeFileSync(
    path.join(latest, "meta_data.json"),
    JSON.stringify({
      uuid: instanceId,
      name: "cloud-node",
      hostname: "cloud-node.novalocal",
      availability_zone: "nova",
      launch_index: 0,
    }),
  );
  fs.writeFileSync(
    path.join(latest, "network_data.json"),
    JSON.stringify({
      links: [{ id: "tap0", type: "ovs", ethernet_mac_address: mac, mtu: 1500 }],
      networks: [
        { id: "network0", type: "ipv4_dhcp", link: "tap0", network_id: "e7c1d9a2-0f3b-4c5d-8e6f-1a2b3c4d5e6f" },
      ],
      services: [{ type: "dns", address: "10.0.2.3" }],
    }),
  );
  const iso = path.join(outDir, "config-drive.iso");
  execFileSync("genisoimage", [
    "-o",
    iso,
    "-ldots",
    "-allow-lowercase",
    "-allow-multidot",
    "-l",
    "-publisher",
    "OpenStack Compute",
    "-quiet",
    "-J",
    "-r",
    "-V",
    "config-2",
    dir,
  ]);
  fs.rmSync(dir, { recursive: true });
  return iso;
}

type ResourceReply = { resource: { spec: { yaml_spec: string } } };
type Listed = { resource: { metadata: { id: string }; spec: { yaml_spec: string } } }[];

test("openstack image: boots from its disk, configured by a config-2 drive; PlatformMetadata, hostname and platform network from it", {
  skip: artifactsPresent() && fs.existsSync(metalDiskImage()) ? false : "image not built (npm run image)",
  timeout: 30 * 60_000,
}, async (t) => {
  ensureCloudImages([{ platform: "openstack", image: "openstack-amd64.raw.xz" }]);
  const generated = await generateConfigs({
    clusterName: "cloud-image",
    endpoint: "https://10.0.2.15:6443",
    installDisk: "/dev/vda",
  });
  const creds = parseTalosconfig(generated.talosconfig);
  const cdrom = configDrive(generated.controlplane);
  t.after(() => fs.rmSync(cdrom, { force: true }));
  rootDisk("cloud-openstack");
  const node = await bootNode({
    name: "cloud-openstack",
    boot: "disk",
    disk: "cloud-openstack",
    freshDisk: false,
    cdrom,
  });
  t.after(() => node.stop({ removeDisk: true }));

  const c = node.mtlsClient(creds);
  await waitFor(node, "mTLS with the config drive's user_data", () => c.version(), bootMs);
  assert.match(node.console(), /talos\.platform=openstack/);
  assert.match(node.console(), /found config disk \(config-drive\)/);
  // The network and the user data both read the drive; neither read fails and falls back to a metadata service.
  assert.doesNotMatch(node.console(), /the config drive could not be read|fetching the user data failed/);
  assert.match(node.console(), /machine configuration loaded from the platform.*openstack user data/);

  const metadata = await waitFor(
    node,
    "PlatformMetadata from meta_data.json",
    async () => {
      const yaml = (
        (await c.resourceGet("runtime", "PlatformMetadatas.talos.dev", "platformmetadata")) as ResourceReply
      ).resource.spec.yaml_spec;
      assert.match(yaml, /^platform: openstack$/m);
      assert.match(yaml, /^instanceId:/m);
      return yaml;
    },
    60_000,
  );
  assert.equal(
    metadata,
    `platform: openstack\nhostname: cloud-node.novalocal\nzone: nova\ninstanceId: ${instanceId}\nproviderId: openstack:///${instanceId}\n`,
  );

  const list = async (ns: string, type: string) =>
    new Map(
      ((await c.resourceList(ns, type)) as Listed).map(
        (r) => [r.resource.metadata.id, r.resource.spec.yaml_spec] as const,
      ),
    );
  const lan = [...(await list("network", "LinkStatuses.net.talos.dev"))].find(([, y]) =>
    new RegExp(`^hardwareAddr: "?${mac}"?$`, "m").test(y),
  )?.[0];
  assert.ok(lan, "the NIC with QEMU's MAC");
  const operators = [...(await list("network-config", "OperatorSpecs.net.talos.dev")).keys()];
  assert.ok(operators.includes(`platform/dhcp4/${lan}`), operators.join(" "));
  assert.equal(
    (await list("network-config", "ResolverSpecs.net.talos.dev")).get("platform/resolvers"),
    "dnsServers:\n    - 10.0.2.3\nlayer: platform\n",
  );
  await waitFor(
    node,
    "the hostname from meta_data.json",
    async () => {
      const hostname = (await list("network", "HostnameStatuses.net.talos.dev")).get("hostname") ?? "";
      assert.match(hostname, /^hostname: cloud-node$/m);
      assert.match(hostname, /^domainname: novalocal$/m);
    },
    60_000,
  );
});
