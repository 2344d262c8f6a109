// The cloud images' packing, on a small raw disk instead of a built one: every platform's
// output read back with the tools a cloud's import uses (qemu-img's JSON, tar's listing,
// the VHD footer's fields, the OVA's descriptor and manifest), each holding the same bytes.
// Then a platform's disk from a metal-like image on loop devices: grub.cfg's command line
// rewritten on BOOT (xfs) and the disk grown with its backup GPT at the new end.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { parseBootSlots, renderGrubConfig } from "../../agent/src/storage/bootloader/grub.js";
import { planTable, readGpt, writeGpt } from "../../agent/src/storage/gpt.js";
import { packImage } from "../../agent/src/storage/image-pack.js";
import { systemLayout } from "../../agent/src/storage/layout.js";
import { extendImage, setImageCmdline, type LoopDevices } from "../../agent/src/storage/platform-disk.js";
import {
  imageFileName,
  platformCmdline,
  platformImages,
  type PlatformImage,
} from "../../agent/src/storage/platform-images.js";
import { openBlockTarget } from "../../agent/src/sys/blockdev.js";
import { systemMounter } from "../../agent/src/sys/mount.js";

const MiB = 1024 * 1024;
const run = (cmd: string, args: string[]) =>
  execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * MiB });
const runBytes = (cmd: string, args: string[]) =>
  execFileSync(cmd, args, { stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 * MiB });
const has = (tools: string[]) => {
  try {
    run("which", tools);
    return true;
  } catch {
    return false;
  }
};
const packTools = has(["qemu-img", "xz", "gzip", "zstd", "tar"]);
const work = fs.mkdtempSync(path.join(os.tmpdir(), `basalt-platform-images-${process.pid}-`));
after(() => fs.rmSync(work, { recursive: true, force: true }));

const sha256 = (file: string) => createHash("sha256").update(fs.readFileSync(file)).digest("hex");

interface QemuInfo {
  format: string;
  "virtual-size": number;
  "cluster-size"?: number;
  "format-specific"?: { type: string; data: Record<string, unknown> };
}
const qemuInfo = (file: string, format?: string) =>
  JSON.parse(run("qemu-img", ["info", "--output=json", ...(format ? ["-f", format] : []), file])) as QemuInfo;
/** qemu-img compare: 0 when the guest sees the same bytes (a bigger image's extra must be zeros). */
const sameContent = (a: string, fa: string, b: string, fb: string) =>
  run("qemu-img", ["compare", "-f", fa, "-F", fb, a, b]).includes("Images are identical");

// 16 MiB and 4 KiB of disk: data at its start, middle and end, holes between (sparse, as a disk image is).
const rawBytes = 16 * MiB + 4096;
function smallRaw(file: string): void {
  const fd = fs.openSync(file, "w");
  for (const offset of [0, 5 * MiB + 512, rawBytes - 8192])
    fs.writeSync(fd, createHash("sha512").update(String(offset)).digest().toString("hex").repeat(64), offset);
  fs.ftruncateSync(fd, rawBytes);
  fs.closeSync(fd);
}

async function packed(image: PlatformImage): Promise<{ raw: string; out: string }> {
  const dir = path.join(work, image.platform);
  fs.mkdirSync(dir, { recursive: true });
  const raw = path.join(dir, "disk.raw");
  smallRaw(raw);
  const out = path.join(dir, imageFileName(image, "amd64"));
  await packImage(raw, image, out, { workDir: path.join(dir, "work"), threads: 2 });
  assert.deepEqual(fs.readdirSync(path.join(dir, "work")), [], "no scratch files are left");
  return { raw, out };
}

/** Decompresses `file` (xz, gzip or zstd) next to it. */
function unpack(file: string, tool: "xz" | "gzip" | "zstd"): string {
  const plain = file.replace(/\.(xz|gz|zst)$/, "");
  fs.writeFileSync(plain, runBytes(tool, ["-dc", file]));
  return plain;
}

describe("cloud image packing", {
  skip: packTools ? false : "needs qemu-img, xz, gzip, zstd and tar (scripts/setup-deps.sh)",
}, () => {
  test("raw.xz and raw.gz hold the disk's bytes (aws, openstack, hcloud, nocloud, ... and digital-ocean, akamai)", async () => {
    for (const name of ["aws", "digital-ocean"]) {
      const image = platformImages[name]!;
      const { raw, out } = await packed(image);
      const magic =
        image.packing === "xz" ? Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]) : Buffer.from([0x1f, 0x8b]);
      assert.deepEqual(fs.readFileSync(out).subarray(0, magic.length), magic, `${image.packing} magic`);
      const plain = unpack(out, image.packing === "xz" ? "xz" : "gzip");
      assert.equal(fs.statSync(plain).size, rawBytes);
      assert.equal(sha256(plain), sha256(raw));
    }
  });

  test("qcow2.xz (oracle, exoscale) is a qcow2 of the disk's size with 8 KiB clusters and the same content", async () => {
    for (const name of ["oracle", "exoscale"]) {
      const { raw, out } = await packed(platformImages[name]!);
      assert.match(out, /-amd64\.qcow2\.xz$/);
      const qcow2 = unpack(out, "xz");
      const info = qemuInfo(qcow2);
      assert.equal(info.format, "qcow2");
      assert.equal(info["virtual-size"], rawBytes);
      assert.equal(info["cluster-size"], 8192);
      assert.ok(sameContent(raw, "raw", qcow2, "qcow2"));
    }
  });

  test("vhd.xz (azure) is a fixed VHD rounded up to a whole MiB: its footer says so, and the data is the disk's", async () => {
    const { raw, out } = await packed(platformImages["azure"]!);
    assert.match(out, /azure-amd64\.vhd\.xz$/);
    const vhd = unpack(out, "xz");
    const whole = 17 * MiB;
    assert.equal(fs.statSync(vhd).size, whole + 512, "a fixed VHD is the disk then a 512-byte footer");
    // A fixed VHD has no header to probe (qemu-img would take it for raw): the footer says what it is.
    assert.equal(qemuInfo(vhd, "vpc")["virtual-size"], whole);
    const footer = Buffer.alloc(512);
    const fd = fs.openSync(vhd, "r");
    fs.readSync(fd, footer, 0, 512, whole);
    fs.closeSync(fd);
    assert.equal(footer.subarray(0, 8).toString("latin1"), "conectix");
    assert.equal(footer.readUInt32BE(12), 0x00010000, "file format version 1.0");
    assert.equal(footer.readBigUInt64BE(16), 0xffffffffffffffffn, "a fixed disk has no data offset");
    assert.equal(footer.readBigUInt64BE(40), BigInt(whole), "original size");
    assert.equal(footer.readBigUInt64BE(48), BigInt(whole), "current size");
    assert.equal(footer.readUInt32BE(60), 2, "disk type: fixed");
    let sum = 0;
    for (let i = 0; i < 512; i++) if (i < 64 || i >= 68) sum += footer[i]!;
    assert.equal(footer.readUInt32BE(64), ~sum >>> 0, "the footer's checksum");
    assert.ok(sameContent(raw, "raw", vhd, "vpc"));
  });

  test("raw.tar.gz (gcp) is a gzipped GNU tar (oldgnu) of one sparse member disk.raw holding the disk", async () => {
    const { raw, out } = await packed(platformImages["gcp"]!);
    assert.match(out, /gcp-amd64\.raw\.tar\.gz$/);
    const tar = runBytes("gzip", ["-dc", out]);
    assert.equal(run("tar", ["-tzf", out]), "disk.raw\n");
    // oldgnu's magic is "ustar  \0" (POSIX's is "ustar\0" "00"); type 'S': a GNU sparse member.
    assert.equal(tar.subarray(257, 265).toString("latin1"), "ustar  \0");
    assert.equal(String.fromCharCode(tar[156]!), "S");
    const dir = path.join(work, "gcp", "x");
    fs.mkdirSync(dir);
    run("tar", ["-xzf", out, "-C", dir]);
    assert.equal(fs.statSync(path.join(dir, "disk.raw")).size, rawBytes);
    assert.equal(sha256(path.join(dir, "disk.raw")), sha256(raw));
  });

  test("ova (vmware) is a ustar of the OVF first, its manifest and a stream-optimized VMDK the OVF references", async () => {
    const { raw, out } = await packed(platformImages["vmware"]!);
    assert.match(out, /vmware-amd64\.ova$/);
    assert.equal(run("tar", ["-tf", out]), "disk.ovf\ndisk.mf\ndisk.vmdk\n");
    assert.equal(fs.readFileSync(out).subarray(257, 263).toString("latin1"), "ustar\0");
    const dir = path.join(work, "vmware", "x");
    fs.mkdirSync(dir);
    run("tar", ["-xf", out, "-C", dir]);
    const vmdk = path.join(dir, "disk.vmdk");
    const ovf = fs.readFileSync(path.join(dir, "disk.ovf"), "utf8");
    assert.match(ovf, new RegExp(`<File ovf:id="file1" ovf:href="disk\\.vmdk" ovf:size="${fs.statSync(vmdk).size}"/>`));
    assert.match(ovf, /ovf:capacity="17" ovf:capacityAllocationUnits="byte \* 2\^20"/);
    assert.equal(
      fs.readFileSync(path.join(dir, "disk.mf"), "utf8"),
      `SHA256(disk.vmdk)= ${sha256(vmdk)}\nSHA256(disk.ovf)= ${sha256(path.join(dir, "disk.ovf"))}\n`,
    );
    const info = qemuInfo(vmdk);
    assert.equal(info.format, "vmdk");
    assert.equal(info["virtual-size"], rawBytes);
    assert.equal(info["format-specific"]?.data["create-type"], "streamOptimized");
    assert.ok(sameContent(raw, "raw", vmdk, "vmdk"));
  });

  test("every platform's image packs, under the file name Talos's imager gives it", async () => {
    const names = [];
    for (const image of Object.values(platformImages)) {
      if (["aws", "digital-ocean", "oracle", "exoscale", "azure", "gcp", "vmware"].includes(image.platform)) continue;
      const { out } = await packed(image);
      names.push(path.basename(out));
    }
    assert.deepEqual(names, [
      "akamai-amd64.raw.gz",
      "hcloud-amd64.raw.xz",
      "nocloud-amd64.raw.xz",
      "opennebula-amd64.raw.xz",
      "openstack-amd64.raw.xz",
      "scaleway-amd64.raw.xz",
      "upcloud-amd64.raw.xz",
      "vultr-amd64.raw.xz",
    ]);
  });
});

const diskTools = process.getuid?.() === 0 && fs.existsSync("/dev/loop-control") && has(["losetup", "mkfs.xfs"]);
const loops: LoopDevices = {
  attach: async (file, offset, size) =>
    run("losetup", ["-f", "--show", "-o", String(offset), "--sizelimit", String(size), file]).trim(),
  detach: async (device) => {
    run("losetup", ["-d", device]);
  },
};

test("a platform's disk from a metal one: BOOT's grub.cfg boots the platform's command line, the disk grows with its backup GPT at the end", {
  skip: diskTools ? false : "needs root, loop devices and xfsprogs",
}, async () => {
  const raw = path.join(work, "metal.raw");
  fs.writeFileSync(raw, "");
  fs.truncateSync(raw, 1306 * MiB);
  let dev = await openBlockTarget(raw);
  const table = planTable(dev.sizeBytes, 512, systemLayout());
  await writeGpt(dev, table);
  const bootCode = Buffer.from("grub boot code stand-in".padEnd(440, "."));
  await dev.write(0, bootCode);
  await dev.close();
  const boot = table.partitions.find((p) => p.name === "BOOT")!;
  const bootDev = await loops.attach(raw, Number(boot.firstLba) * 512, Number(boot.lastLba - boot.firstLba + 1n) * 512);
  const mounter = systemMounter();
  const mnt = path.join(work, "boot");
  fs.mkdirSync(mnt);
  const metalCmdline = "talos.platform=metal console=tty0 console=ttyS0 init_on_alloc=1 pti=on";
  try {
    run("mkfs.xfs", ["-q", "-L", "BOOT", bootDev]);
    await mounter.mount(bootDev, mnt, "xfs");
    fs.mkdirSync(path.join(mnt, "grub"));
    fs.writeFileSync(
      path.join(mnt, "grub", "grub.cfg"),
      renderGrubConfig({ current: "A", version: "v0.1.0", cmdline: metalCmdline, serialTerminal: true }),
    );
    await mounter.unmount(mnt);
  } finally {
    await loops.detach(bootDev);
  }

  const aws = platformImages["aws"]!;
  const cmdline = await setImageCmdline(raw, (current) => platformCmdline(current, aws), {
    mounter,
    loops,
    mountDir: mnt,
  });
  assert.equal(cmdline, "talos.platform=aws console=tty1 console=ttyS0 net.ifnames=0 init_on_alloc=1 pti=on");
  await extendImage(raw, aws.diskSizeMiB! * MiB);

  assert.equal(fs.statSync(raw).size, 8192 * MiB);
  assert.ok(
    fs.statSync(raw).blocks * 512 < 128 * MiB,
    `the grown disk stays sparse (${fs.statSync(raw).blocks * 512} bytes used)`,
  );
  dev = await openBlockTarget(raw, { write: false });
  const lastLba = (8192 * MiB) / 512 - 1;
  const grown = await readGpt(dev);
  const backupHeader = await dev.read(lastLba * 512, 512);
  const oldBackup = await dev.read(1306 * MiB - 33 * 512, 33 * 512);
  const mbr = await dev.read(0, 512);
  await dev.close();
  assert.equal(backupHeader.subarray(0, 8).toString("latin1"), "EFI PART");
  assert.equal(backupHeader.readBigUInt64LE(24), BigInt(lastLba), "the backup header's own LBA is the last");
  assert.equal(grown?.lastUsableLba, BigInt(lastLba - 33));
  assert.deepEqual(
    grown?.partitions.map((p) => [p.name, p.firstLba, p.lastLba, p.uuid]),
    table.partitions.map((p) => [p.name, p.firstLba, p.lastLba, p.uuid]),
    "partitions unchanged: EPHEMERAL grows at first boot",
  );
  assert.ok(
    oldBackup.every((b) => b === 0),
    "the old backup copy is wiped",
  );
  assert.deepEqual(mbr.subarray(0, 440), bootCode, "the MBR's boot code is kept");
  assert.equal(mbr.readUInt32LE(446 + 12), Math.min(lastLba, 0xffffffff), "the protective MBR spans the grown disk");

  const again = await loops.attach(raw, Number(boot.firstLba) * 512, Number(boot.lastLba - boot.firstLba + 1n) * 512);
  try {
    await mounter.mount(again, mnt, "xfs", ["ro"]);
    const slots = parseBootSlots(fs.readFileSync(path.join(mnt, "grub", "grub.cfg"), "utf8"));
    await mounter.unmount(mnt);
    assert.deepEqual(slots, { default: "A", entries: { A: { version: "v0.1.0", cmdline } } });
  } finally {
    await loops.detach(again);
  }
});
