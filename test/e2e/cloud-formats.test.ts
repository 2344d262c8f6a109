// Each cloud image boots from its own file as its cloud attaches the disk: AWS's raw disk on NVMe
// under UEFI (Nitro, and its arm64 image as on Graviton), GCE's disk.raw from its tar on virtio-scsi
// under SeaBIOS, Azure's fixed VHD read as a VHD on IDE under BIOS (generation 1), DigitalOcean's,
// Vultr's and UpCloud's on virtio under SeaBIOS, Akamai's and Hetzner's on virtio-scsi under
// SeaBIOS, Oracle's qcow2 on virtio-scsi under UEFI, Exoscale's qcow2 on virtio, Scaleway's on
// virtio-scsi under UEFI, OpenNebula's on virtio, and the OVA's disk, imported as vSphere does, on
// the paravirtual SCSI controller its OVF names. Each instance but VMware's finds its metadata
// service at 169.254.169.254 (the integration tests' server, relayed by QEMU; Scaleway's at
// 169.254.42.42, Azure's wire server too) or its CD (Azure's provisioning CD, OpenNebula's context).
// Those with user data run it; GCE's and Hetzner's give none: those nodes wait in maintenance mode.
// Each takes its hostname and PlatformMetadata from the service. QEMU's CPU is no VMware one (its
// hypervisor signature is TCG's), so the VMware node reads no guestinfo, says why, and waits in
// maintenance mode.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { parse as parseYaml } from "yaml";
import type { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { type LoopbackMetadata, loopbackMetadata } from "../integration/helpers/loopback-metadata.js";
import { fixturesRoot, type Scenario } from "../integration/helpers/metadata-server.js";
import { resourceSpecs } from "../integration/helpers/resource-specs.js";
import { type Arch, cloudImageFile, ensureCloudImages, metalDiskImage } from "./cloud-images.js";
import {
  artifactsPresent,
  type BootedNode,
  bootNode,
  type BootOptions,
  diskFile,
  outDir,
  sequenceFailed,
  waitFor,
} from "./qemu.js";

const bootMs = 600_000;

interface CloudBoot {
  platform: string;
  /** Default amd64; arm64 boots in qemu-system-aarch64 under TCG. */
  arch?: Arch;
  /** The packed image in _out. */
  image: string;
  /** Unpacks the image into the file `disk`. */
  unpack(image: string, disk: string): void;
  diskFormat: NonNullable<BootOptions["diskFormat"]>;
  diskBus: NonNullable<BootOptions["diskBus"]>;
  firmware: "uefi" | "bios";
  /** The kernel's partition line for the disk on that bus. */
  partitions: RegExp;
  /** The metadata service at 169.254.169.254, with or without the machine configuration as user data; absent: none answers. */
  metadata?: "user data" | "no user data";
  /** A CD the cloud attaches, holding the user data in place of the service (Azure's provisioning CD, OpenNebula's context). */
  provisioningCd?(userData: string): string;
  /** The image's kernel arguments name no serial console (UpCloud's): its log is read over the API (Dmesg). */
  serialConsole?: false;
  /** What the service serves besides the platform's fixture. */
  scenario?: Omit<Scenario, "platform" | "userData">;
  /** What the platform's own rules require of the requests the node made to its service. */
  checkRequests?(requests: SeenRequest[]): void;
  /** What the kernel's log says of reading the platform, once the node reached its state. */
  checkLog?(log: string): void;
  /** What the node shows of the platform's network, once it runs in its state. */
  checkNetwork?(node: BootedNode, c: NodeClient): Promise<void>;
}

/** The address, netmask and gateway QEMU's user network gives the guest, where the API is forwarded to. */
const qemuGuestIPv4 = { address: "169.254.2.15", netmask: "254.0.0.0", gateway: "169.254.2.2" };

const sh = (script: string, ...args: string[]) => execFileSync("sh", ["-c", script, "sh", ...args]);
const xzSparse = (image: string, disk: string) =>
  sh('xz -d -c -T2 "$1" | cp --sparse=always /dev/stdin "$2"', image, disk);
const gzSparse = (image: string, disk: string) =>
  sh('gzip -d -c "$1" | cp --sparse=always /dev/stdin "$2"', image, disk);
/** A qcow2 keeps its own sparseness. */
const xzQcow2 = (image: string, disk: string) => sh('xz -d -c -T2 "$1" >"$2"', image, disk);

/** The machine configuration the instances with user data get, and the talosconfig that reaches them. */
const configs = generateConfigs({
  clusterName: "cloud-formats",
  endpoint: "https://169.254.2.15:6443",
  installDisk: "/dev/nvme0n1",
});

/** PlatformMetadata and the hostname as the platform's fixture expects them from its instance documents. */
async function expectInstanceFacts(node: BootedNode, c: NodeClient, platform: string): Promise<void> {
  const expected = parseYaml(fs.readFileSync(path.join(fixturesRoot, platform, "expected.yaml"), "utf8")) as {
    metadata: Record<string, unknown>;
    hostnames: { hostname: string; domainname: string }[];
  };
  const { hostname, domainname } = expected.hostnames[0]!;
  await waitFor(
    node,
    "PlatformMetadata and the hostname from the metadata service",
    async () => {
      assert.deepEqual(
        (await resourceSpecs(c, "runtime", "PlatformMetadatas.talos.dev")).get("platformmetadata"),
        expected.metadata,
      );
      assert.deepEqual((await resourceSpecs(c, "network", "HostnameStatuses.net.talos.dev")).get("hostname"), {
        hostname,
        domainname,
      });
    },
    120_000,
  );
}

/** The platform layer holds these addresses (`link/address/prefix`) and the node has them. */
async function expectPlatformAddresses(node: BootedNode, c: NodeClient, expected: string[]): Promise<void> {
  const ids = async (ns: string, type: string) => [...(await resourceSpecs(c, ns, type)).keys()];
  await waitFor(
    node,
    `the platform's addresses ${expected.join(", ")}`,
    async () => {
      const specs = await ids("network-config", "AddressSpecs.net.talos.dev");
      const statuses = await ids("network", "AddressStatuses.net.talos.dev");
      for (const id of expected) {
        assert.ok(specs.includes(`platform/${id}`), specs.join(" "));
        assert.ok(statuses.includes(id), statuses.join(" "));
      }
    },
    120_000,
  );
}

/** The console line that says the node reached the state its metadata implies. */
function reaches(cloud: CloudBoot): RegExp {
  if (cloud.metadata === "user data")
    return new RegExp(`machine configuration loaded from the platform.*${cloud.platform} user data`);
  if (cloud.metadata === "no user data")
    return new RegExp(`platform ${cloud.platform} gives no user data; entering maintenance mode`);
  return /maintenance: waiting for configuration/;
}

/** A client of the node in that state: over mutual TLS once it runs its platform's configuration, else maintenance mode's. */
async function clientInItsState(node: BootedNode, cloud: CloudBoot, timeoutMs = 120_000): Promise<NodeClient> {
  if (cloud.metadata !== "user data") {
    const c = node.client();
    await waitFor(node, "the maintenance API", () => c.disks(), timeoutMs);
    return c;
  }
  const c = node.mtlsClient(parseTalosconfig((await configs).talosconfig));
  await waitFor(node, "mutual TLS with the platform's configuration", () => c.version(), timeoutMs);
  return c;
}

/** The kernel's log up to the line that says the node reached its state: its serial console, or Dmesg when it has none. */
async function kernelLogOnceReached(node: BootedNode, cloud: CloudBoot): Promise<string> {
  if (cloud.serialConsole !== false) {
    await waitFor(
      node,
      `${cloud.platform}: ${reaches(cloud)}`,
      async () => assert.match(node.console(), reaches(cloud)),
      bootMs,
      { failOn: sequenceFailed },
    );
    return node.console();
  }
  const c = await clientInItsState(node, cloud, bootMs);
  const log = Buffer.concat(
    (await c.collect<{ bytes?: Buffer }>(c.machine, "Dmesg", {})).map((m) => m.bytes ?? Buffer.alloc(0)),
  ).toString();
  assert.match(log, reaches(cloud));
  return log;
}

type SeenRequest = { method: string; host: string; url: string; headers: Record<string, string | undefined> };
const seen = (service: LoopbackMetadata) => service.requests.map((r) => JSON.parse(r) as SeenRequest);

/** AWS on Nitro: NVMe under UEFI. */
const aws: CloudBoot = {
  platform: "aws",
  image: "aws-amd64.raw.xz",
  unpack: xzSparse,
  diskFormat: "raw",
  diskBus: "nvme",
  firmware: "uefi",
  partitions: /nvme0n1: p1 p2 p3 p4 p5 p6/,
  metadata: "user data",
  checkRequests: (requests) => {
    // IMDSv2: every read carried a session token from a PUT.
    assert.ok(requests.some((r) => r.method === "PUT" && r.url === "/latest/api/token"));
    assert.ok(requests.some((r) => r.url === "/latest/user-data"));
    const reads = requests.filter((r) => r.method === "GET");
    assert.ok(reads.every((r) => /^token-\d+$/.test(r.headers["x-aws-ec2-metadata-token"] ?? "")));
  },
};

const clouds: CloudBoot[] = [
  aws,
  // Graviton attaches the arm64 image as Nitro does.
  { ...aws, arch: "arm64", image: "aws-arm64.raw.xz" },
  {
    platform: "gcp",
    image: "gcp-amd64.raw.tar.gz",
    // GCE's import takes disk.raw from the tar.
    unpack: (image, disk) =>
      sh(
        'd=$(mktemp -d -p "$3") && tar -xSzf "$1" -C "$d" disk.raw && mv "$d/disk.raw" "$2" && rmdir "$d"',
        image,
        disk,
        outDir,
      ),
    diskFormat: "raw",
    diskBus: "virtio-scsi",
    firmware: "bios",
    partitions: /sda: sda1 sda2 sda3 sda4 sda5 sda6/,
    metadata: "no user data",
    checkRequests: (requests) =>
      assert.ok(requests.length > 0 && requests.every((r) => r.headers["metadata-flavor"] === "Google")),
  },
  {
    platform: "azure",
    image: "azure-amd64.vhd.xz",
    unpack: xzSparse,
    diskFormat: "vpc",
    diskBus: "ide",
    firmware: "bios",
    partitions: /sda: sda1 sda2 sda3 sda4 sda5 sda6/,
    metadata: "user data",
    provisioningCd: azureProvisioningCd,
    checkRequests: (requests) => {
      // Provisioning completes: the goal state read (again after a read that timed out on a loaded
      // host: the node retries), then Ready posted once, last.
      const wire = requests.filter((r) => r.host === "168.63.129.16").map((r) => `${r.method} ${r.url}`);
      const reads = wire.slice(0, -1);
      assert.ok(reads.length > 0 && reads.every((w) => w === "GET /machine/?comp=goalstate"), wire.join(", "));
      assert.equal(wire.at(-1), "POST /machine/?comp=health");
      assert.ok(requests.filter((r) => r.host === "169.254.169.254").every((r) => r.headers["metadata"] === "true"));
    },
  },
  {
    platform: "digital-ocean",
    image: "digital-ocean-amd64.raw.gz",
    unpack: gzSparse,
    diskFormat: "raw",
    diskBus: "virtio",
    firmware: "bios",
    partitions: /vda: vda1 vda2 vda3 vda4 vda5 vda6/,
    metadata: "user data",
    // The droplet's public IPv4 is static (no DHCP on DigitalOcean): QEMU's guest address and gateway,
    // which the API is forwarded to.
    scenario: { publicIPv4: qemuGuestIPv4 },
    checkRequests: (requests) => assert.ok(requests.some((r) => r.url === "/metadata/v1/user-data")),
    checkNetwork: (node, c) => expectPlatformAddresses(node, c, ["eth0/169.254.2.15/7", "eth0/10.19.0.5/16"]),
  },
  {
    platform: "upcloud",
    image: "upcloud-amd64.raw.xz",
    unpack: xzSparse,
    diskFormat: "raw",
    diskBus: "virtio",
    firmware: "bios",
    partitions: /vda: vda1 vda2 vda3 vda4 vda5 vda6/,
    metadata: "user data",
    serialConsole: false,
    checkRequests: (requests) => assert.ok(requests.some((r) => r.url === "/metadata/v1/user_data")),
    // The floating address is static beside eth0's DHCP one.
    checkNetwork: (node, c) => expectPlatformAddresses(node, c, ["eth0/185.70.197.3/32"]),
  },
  {
    platform: "vultr",
    image: "vultr-amd64.raw.xz",
    unpack: xzSparse,
    diskFormat: "raw",
    diskBus: "virtio",
    firmware: "bios",
    partitions: /vda: vda1 vda2 vda3 vda4 vda5 vda6/,
    metadata: "user data",
    serialConsole: false,
    // The public interface's IPv4 is static: QEMU's guest address and gateway.
    scenario: { publicIPv4: qemuGuestIPv4 },
    checkRequests: (requests) => assert.ok(requests.some((r) => r.url === "/latest/user-data")),
    checkNetwork: (node, c) => expectPlatformAddresses(node, c, ["eth0/169.254.2.15/7"]),
  },
  {
    platform: "akamai",
    image: "akamai-amd64.raw.gz",
    unpack: gzSparse,
    diskFormat: "raw",
    diskBus: "virtio-scsi",
    firmware: "bios",
    partitions: /sda: sda1 sda2 sda3 sda4 sda5 sda6/,
    metadata: "user data",
    // Static addresses and no IPv4 route: QEMU's guest address with its prefix, its gateway on the link.
    scenario: { publicIPv4: qemuGuestIPv4 },
    checkRequests: (requests) => {
      assert.ok(requests.some((r) => r.method === "PUT" && r.url === "/v1/token"));
      assert.ok(requests.some((r) => r.url === "/v1/user-data"));
    },
    checkNetwork: (node, c) => expectPlatformAddresses(node, c, ["eth0/169.254.2.15/7", "eth0/192.1.2.3/32"]),
  },
  {
    platform: "hcloud",
    image: "hcloud-amd64.raw.xz",
    unpack: xzSparse,
    diskFormat: "raw",
    diskBus: "virtio-scsi",
    firmware: "bios",
    partitions: /sda: sda1 sda2 sda3 sda4 sda5 sda6/,
    metadata: "no user data",
  },
  {
    platform: "oracle",
    image: "oracle-amd64.qcow2.xz",
    unpack: xzQcow2,
    diskFormat: "qcow2",
    diskBus: "virtio-scsi",
    firmware: "uefi",
    partitions: /sda: sda1 sda2 sda3 sda4 sda5 sda6/,
    metadata: "user data",
    checkRequests: (requests) =>
      assert.ok(requests.length > 0 && requests.every((r) => r.headers["authorization"] === "Bearer Oracle")),
  },
  {
    platform: "exoscale",
    image: "exoscale-amd64.qcow2.xz",
    unpack: xzQcow2,
    diskFormat: "qcow2",
    diskBus: "virtio",
    firmware: "bios",
    partitions: /vda: vda1 vda2 vda3 vda4 vda5 vda6/,
    metadata: "user data",
  },
  {
    platform: "scaleway",
    image: "scaleway-amd64.raw.xz",
    unpack: xzSparse,
    diskFormat: "raw",
    diskBus: "virtio-scsi",
    firmware: "uefi",
    partitions: /sda: sda1 sda2 sda3 sda4 sda5 sda6/,
    metadata: "user data",
    checkRequests: (requests) => {
      // Its own address, and the user data only to a privileged source port (which the relay does not show).
      assert.ok(requests.length > 0 && requests.every((r) => r.host === "169.254.42.42"));
      assert.ok(requests.some((r) => r.url === "/user_data/cloud-init"));
    },
  },
  {
    platform: "opennebula",
    image: "opennebula-amd64.raw.xz",
    unpack: xzSparse,
    diskFormat: "raw",
    diskBus: "virtio",
    firmware: "bios",
    partitions: /vda: vda1 vda2 vda3 vda4 vda5 vda6/,
    metadata: "user data",
    provisioningCd: openNebulaContextCd,
    // Everything comes from the context CD.
    checkRequests: (requests) => assert.deepEqual(requests, []),
  },
  {
    platform: "vmware",
    image: "vmware-amd64.ova",
    // vSphere imports the OVA's stream-optimized VMDK into a disk of its own.
    unpack: (image, disk) =>
      sh(
        'd=$(mktemp -d -p "$3") && tar -xf "$1" -C "$d" disk.vmdk && qemu-img convert -q -O qcow2 "$d/disk.vmdk" "$2" && rm -r "$d"',
        image,
        disk,
        outDir,
      ),
    diskFormat: "qcow2",
    diskBus: "pvscsi",
    firmware: "bios",
    partitions: /sda: sda1 sda2 sda3 sda4 sda5 sda6/,
    checkLog: (log) => {
      assert.match(log, / talos\.config=guestinfo /);
      assert.match(log, /fetching machine config from VMware extraConfig or OVF env/);
      assert.match(log, /not a VMware virtual machine: the CPU's hypervisor signature is \\?"TCGTCGTCGTCG\\?"/);
    },
  },
];

/** An ISO in _out holding one file, made with genisoimage as a cloud's tools make it. */
function isoWith(iso: string, file: string, content: string, genisoimageArgs: string[]): string {
  const dir = fs.mkdtempSync(path.join(outDir, "cd-"));
  fs.writeFileSync(path.join(dir, file), content);
  const out = path.join(outDir, iso);
  execFileSync("genisoimage", ["-quiet", ...genisoimageArgs, "-J", "-r", "-o", out, dir]);
  fs.rmSync(dir, { recursive: true });
  return out;
}

/** Azure's provisioning CD as the platform attaches it: ovf-env.xml, the user data base64 in its CustomData, on UDF. */
function azureProvisioningCd(userData: string): string {
  const ovfEnv = fs
    .readFileSync(path.join(fixturesRoot, "azure", "ovf-env.xml.in"), "utf8")
    .replace("@CUSTOM_DATA@", Buffer.from(userData).toString("base64"));
  return isoWith("azure-provisioning.iso", "ovf-env.xml", ovfEnv, ["-udf", "-V", "rd_rdfe_stable"]);
}

/**
 * OpenNebula's context CD: its context.sh with the user data base64 in USER_DATA, on an ISO labelled CONTEXT.
 * eth0 by DHCP (ETH0_METHOD): the fixture's static address would take away the one QEMU forwards the API to.
 */
function openNebulaContextCd(userData: string): string {
  const contextSh = fs
    .readFileSync(path.join(fixturesRoot, "opennebula", "context.sh"), "utf8")
    .replace('ETH0_METHOD = ""', 'ETH0_METHOD = "dhcp"');
  const withUserData = `${contextSh}USER_DATA="${Buffer.from(userData).toString("base64")}"\n`;
  return isoWith("opennebula-context.iso", "context.sh", withUserData, ["-V", "CONTEXT"]);
}

/** The metadata service the cloud's instance finds, on a loopback port QEMU relays 169.254.169.254:80 to. */
async function metadataService(cloud: CloudBoot): Promise<LoopbackMetadata | undefined> {
  if (!cloud.metadata) return undefined;
  const service = await loopbackMetadata();
  const served = cloud.metadata === "user data" && !cloud.provisioningCd;
  service.serve({
    ...cloud.scenario,
    platform: cloud.platform,
    ...(served ? { userData: (await configs).controlplane } : {}),
  });
  return service;
}

async function bootFromItsDisk(cloud: CloudBoot): Promise<void> {
  const name = `cloud-format-${cloud.platform}${cloud.arch === "arm64" ? "-arm64" : ""}`;
  fs.mkdirSync(outDir, { recursive: true });
  cloud.unpack(cloudImageFile(cloud.image), diskFile(name, cloud.diskFormat));
  const service = await metadataService(cloud);
  const cdrom = cloud.provisioningCd?.((await configs).controlplane);
  const node = await bootNode({
    name,
    arch: cloud.arch ?? "amd64",
    boot: "disk",
    freshDisk: false,
    diskFormat: cloud.diskFormat,
    diskBus: cloud.diskBus,
    firmware: cloud.firmware,
    ...(service ? { metadataPort: Number(new URL(service.origin).port) } : {}),
    ...(cdrom ? { cdrom } : {}),
  });
  try {
    const text = await kernelLogOnceReached(node, cloud);
    assert.match(text, new RegExp(`Kernel command line: BOOT_IMAGE=/A/vmlinuz talos\\.platform=${cloud.platform} `));
    assert.match(text, cloud.partitions);
    assert.match(text, /task mountStatePartition \(1\/1\): done/);
    assert.equal(text.match(/machined: starting/g)?.length, 1, "machined started once: no boot loop");
    assert.match(text, new RegExp(`machined: starting \\{"platform":"${cloud.platform}"\\}`));
    cloud.checkLog?.(text);
    if (service) {
      const c = await clientInItsState(node, cloud);
      await expectInstanceFacts(node, c, cloud.platform);
      await cloud.checkNetwork?.(node, c);
      cloud.checkRequests?.(seen(service));
    }
  } finally {
    await node.stop({ removeDisk: true });
    service?.close();
    if (cdrom) fs.rmSync(cdrom, { force: true });
  }
}

test("cloud images boot from their own disk as their cloud attaches it, into the state their metadata implies", {
  skip:
    artifactsPresent() && fs.existsSync(metalDiskImage()) && fs.existsSync(metalDiskImage("arm64"))
      ? false
      : "images not built (npm run image, npm run image -- --arch arm64)",
  timeout: 30 * 60_000,
  // Two 1-vCPU VMs at a time: the e2e host's two cores.
  concurrency: 2,
}, async (t) => {
  ensureCloudImages(clouds);
  await Promise.all(
    clouds.map((cloud) =>
      t.test(
        `${cloud.platform}${cloud.arch === "arm64" ? " arm64" : ""}: ${cloud.diskBus}, ${cloud.firmware}${cloud.metadata ? `, metadata with ${cloud.metadata}` : ""}`,
        () => bootFromItsDisk(cloud),
      ),
    ),
  );
});
