// Each cloud image boots from its own file as its cloud attaches the disk: AWS's raw disk on NVMe
// under UEFI (Nitro), GCE's disk.raw from its tar on virtio-scsi under SeaBIOS, Azure's fixed VHD
// read as a VHD on IDE under BIOS (generation 1), and the OVA's disk, imported as vSphere does, on
// the paravirtual SCSI controller its OVF names. No metadata service answers here: the node must
// reach machined from that disk, mount STATE from it, and then wait for its platform's metadata
// (retrying, never a boot loop) or, with no guestinfo on VMware, serve maintenance mode.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import {
  artifactsPresent,
  bootNode,
  type BootOptions,
  diskFile,
  outDir,
  repoRoot,
  sequenceFailed,
  waitFor,
} from "./qemu.js";

const bootMs = 600_000;
const out = path.join(repoRoot, "_out");
const metal = path.join(out, "metal-amd64.raw.zst");

interface CloudBoot {
  platform: string;
  /** The packed image in _out. */
  image: string;
  /** Unpacks the image into the file `disk`. */
  unpack(image: string, disk: string): void;
  diskFormat: NonNullable<BootOptions["diskFormat"]>;
  diskBus: NonNullable<BootOptions["diskBus"]>;
  firmware: "uefi" | "bios";
  /** The kernel's partition line for the disk on that bus. */
  partitions: RegExp;
  /** What the node does next without its metadata. */
  waiting: RegExp;
}

const sh = (script: string, ...args: string[]) => execFileSync("sh", ["-c", script, "sh", ...args]);
const xzSparse = (image: string, disk: string) =>
  sh('xz -d -c -T2 "$1" | cp --sparse=always /dev/stdin "$2"', image, disk);
const metadataRetry = (platform: string) => new RegExp(`platform: .*retrying \\{"platform":"${platform}"`);

const clouds: CloudBoot[] = [
  {
    platform: "aws",
    image: "aws-amd64.raw.xz",
    unpack: xzSparse,
    diskFormat: "raw",
    diskBus: "nvme",
    firmware: "uefi",
    partitions: /nvme0n1: p1 p2 p3 p4 p5 p6/,
    waiting: metadataRetry("aws"),
  },
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
    waiting: metadataRetry("gcp"),
  },
  {
    platform: "azure",
    image: "azure-amd64.vhd.xz",
    unpack: xzSparse,
    diskFormat: "vpc",
    diskBus: "ide",
    firmware: "bios",
    partitions: /sda: sda1 sda2 sda3 sda4 sda5 sda6/,
    waiting: metadataRetry("azure"),
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
    waiting: /maintenance: waiting for configuration/,
  },
];

/** The cloud images, made again when the metal image is newer than any of them. */
function ensureImages(): void {
  const stale = clouds.filter((c) => {
    const file = path.join(out, c.image);
    return !fs.existsSync(file) || fs.statSync(file).mtimeMs < fs.statSync(metal).mtimeMs;
  });
  if (stale.length === 0) return;
  execFileSync("bash", ["scripts/platform-images.sh", "amd64", stale.map((c) => c.platform).join(",")], {
    cwd: repoRoot,
    stdio: ["ignore", "ignore", "inherit"],
  });
}

async function bootFromItsDisk(cloud: CloudBoot): Promise<void> {
  const name = `cloud-format-${cloud.platform}`;
  fs.mkdirSync(outDir, { recursive: true });
  cloud.unpack(path.join(out, cloud.image), diskFile(name, cloud.diskFormat));
  const node = await bootNode({
    name,
    boot: "disk",
    freshDisk: false,
    diskFormat: cloud.diskFormat,
    diskBus: cloud.diskBus,
    firmware: cloud.firmware,
  });
  try {
    await waitFor(
      node,
      `${cloud.platform}: ${cloud.waiting}`,
      async () => assert.match(node.console(), cloud.waiting),
      bootMs,
      { failOn: sequenceFailed },
    );
    const text = node.console();
    assert.match(text, new RegExp(`Command line: BOOT_IMAGE=/A/vmlinuz talos\\.platform=${cloud.platform} `));
    assert.match(text, cloud.partitions);
    assert.match(text, /task mountStatePartition \(1\/1\): done/);
    assert.equal(text.match(/machined: starting/g)?.length, 1, "machined started once: no boot loop");
    assert.match(text, new RegExp(`machined: starting \\{"platform":"${cloud.platform}"\\}`));
  } finally {
    await node.stop({ removeDisk: true });
  }
}

test("cloud images boot from their own disk as their cloud attaches it", {
  skip: artifactsPresent() && fs.existsSync(metal) ? false : "image not built (npm run image)",
  timeout: 30 * 60_000,
  // Two 1-vCPU VMs at a time: the e2e host's two cores.
  concurrency: 2,
}, async (t) => {
  ensureImages();
  await Promise.all(
    clouds.map((cloud) =>
      t.test(`${cloud.platform}: ${cloud.diskBus}, ${cloud.firmware}`, () => bootFromItsDisk(cloud)),
    ),
  );
});
