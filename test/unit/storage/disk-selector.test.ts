import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  chooseInstallDisk,
  globMatch,
  installDiskProblem,
  matchesSelector,
  parseByteSize,
  sizeMatcher,
} from "../../../agent/src/storage/disk-selector.js";
import { DiskType, type DiskInfo } from "../../../agent/src/storage/disks.js";
import { InvalidInputError } from "../../../agent/src/errors.js";

function disk(over: Partial<DiskInfo>): DiskInfo {
  return {
    size: 0,
    model: "",
    device_name: "",
    name: "",
    serial: "",
    modalias: "",
    uuid: "",
    wwid: "",
    type: DiskType.UNKNOWN,
    bus_path: "",
    system_disk: false,
    subsystem: "",
    readonly: false,
    ...over,
  };
}

const GB = 1e9;
// As Disks lists them: no optical drive among them.
const disks = [
  disk({
    device_name: "/dev/sda",
    size: 8 * GB,
    model: "QEMU HARDDISK",
    serial: "QM00001",
    type: DiskType.HDD,
    bus_path: "/pci0000:00/0000:00:01.1/ata1/host0/target0:0:0/0:0:0:0",
    wwid: "t10.ATA QEMU HARDDISK QM00001",
  }),
  disk({
    device_name: "/dev/vda",
    size: 20 * 2 ** 30,
    modalias: "virtio:d00000002v00001AF4",
    type: DiskType.HDD,
    bus_path: "/pci0000:00/0000:00:04.0/virtio1",
  }),
  disk({
    device_name: "/dev/nvme0n1",
    size: 512 * GB,
    model: "Samsung SSD 980",
    serial: "S64ANS0T",
    type: DiskType.NVME,
    uuid: "3a5b0e4e-1c2d-4f00-9e7b-aa00bb11cc22",
  }),
  disk({ device_name: "/dev/vdb", size: 1 * GB, readonly: true, bus_path: "/pci0000:00/0000:00:05.0/virtio2" }),
];

// The node's device paths: each disk's, the ISO's drive (which Disks leaves out), a partition, and a by-id link.
const nodes: Record<string, string> = Object.fromEntries(disks.map((d) => [d.device_name, d.device_name]));
Object.assign(nodes, { "/dev/sr0": "/dev/sr0", "/dev/vda1": "/dev/vda1", "/dev/disk/by-id/virtio-data": "/dev/vda" });
const deviceNode = (p: string) => nodes[p];
const choose = (install: Parameters<typeof chooseInstallDisk>[0]) => chooseInstallDisk(install, disks, deviceNode);

describe("install disk selection", () => {
  it("parses sizes as go-humanize does: decimal and binary units, commas, spaces", () => {
    assert.equal(parseByteSize("10GB"), 10 * GB);
    assert.equal(parseByteSize("10 GiB"), 10 * 2 ** 30);
    assert.equal(parseByteSize("1.5TB"), 1.5e12);
    assert.equal(parseByteSize("4k"), 4000);
    assert.equal(parseByteSize("1,000"), 1000);
    assert.throws(
      () => parseByteSize("10 parsecs"),
      /failed to parse disk size 10 parsecs: unhandled size name: parsecs/,
    );
    assert.throws(() => parseByteSize("GB"), InvalidInputError);
  });

  it("compares sizes with Talos's operators; no operator means exactly that size", () => {
    assert.equal(sizeMatcher(">= 10GB")(10 * GB), true);
    assert.equal(sizeMatcher(">=10GB")(10 * GB - 1), false);
    assert.equal(sizeMatcher("> 10GB")(10 * GB), false);
    assert.equal(sizeMatcher("<= 8GB")(8 * GB), true);
    assert.equal(sizeMatcher("< 8GB")(8 * GB), false);
    assert.equal(sizeMatcher("8GB")(8 * GB), true);
    assert.equal(sizeMatcher("== 8GB")(8 * GB + 512), false);
    assert.equal(sizeMatcher(8 * GB)(8 * GB), true);
  });

  it("globs with * only, anchored at both ends", () => {
    assert.equal(globMatch("QEMU*", "QEMU HARDDISK"), true);
    assert.equal(globMatch("*DISK", "QEMU HARDDISK"), true);
    assert.equal(globMatch("Q*HARD*K", "QEMU HARDDISK"), true);
    assert.equal(globMatch("QEMU", "QEMU HARDDISK"), false);
    assert.equal(globMatch("QEMU?HARDDISK", "QEMU HARDDISK"), false, "? is literal");
    assert.equal(globMatch("ab*ba", "aba"), false, "prefix and suffix may not overlap");
    assert.equal(globMatch("*", ""), true);
  });

  it("requires every given field to match", () => {
    const sda = disks[0]!;
    assert.equal(matchesSelector(sda, { model: "QEMU*", type: "hdd" }), true);
    assert.equal(matchesSelector(sda, { model: "QEMU*", type: "ssd" }), false);
    assert.equal(matchesSelector(sda, { busPath: "/pci0000:00/*", serial: "QM00001", size: "8GB" }), true);
    assert.equal(matchesSelector(sda, { wwid: "t10.ATA*" }), true);
    assert.equal(matchesSelector(disks[2]!, { uuid: "3a5b0e4e-*" }), true);
    assert.equal(matchesSelector(disks[1]!, { modalias: "virtio:d00000002*" }), true);
  });

  it("picks the first matching disk; a path through a symlink is the disk it names", () => {
    assert.equal(choose({ diskSelector: { size: "<= 10GB" } }), "/dev/sda");
    assert.equal(choose({ diskSelector: { type: "nvme" } }), "/dev/nvme0n1");
    assert.equal(choose({ diskSelector: { size: ">= 10GB", type: "hdd" } }), "/dev/vda");
    assert.equal(
      choose({ disk: "/dev/sda", diskSelector: { model: "Samsung*" } }),
      "/dev/nvme0n1",
      "the selector wins over disk",
    );
    assert.equal(choose({ disk: "/dev/disk/by-id/virtio-data" }), "/dev/vda");
  });

  it("answers with Talos's errors where Talos checks: a missing path, an unmatched selector", () => {
    assert.throws(
      () => choose({ diskSelector: { size: ">= 1TB" } }),
      (e: unknown) => e instanceof InvalidInputError && e.message === "no disk found matching provided parameters",
    );
    assert.throws(
      () => choose({ disk: "/dev/sdz" }),
      (e: unknown) =>
        e instanceof InvalidInputError && e.message === 'specified install disk does not exist: "/dev/sdz"',
    );
    assert.throws(
      () => choose({}),
      (e: unknown) => e instanceof InvalidInputError && e.message === 'an install disk is required in "metal" mode',
    );
    assert.equal(
      choose({ disk: "/dev/vda", diskSelector: {} }),
      "/dev/vda",
      "an empty selector leaves the disk path in charge",
    );
  });

  it("refuses what the install cannot write: the ISO's drive, a partition, a read-only disk (named or selected)", () => {
    const problem = (install: Parameters<typeof chooseInstallDisk>[0]) =>
      installDiskProblem(install, disks, deviceNode);
    assert.equal(
      problem({ disk: "/dev/sr0" }),
      'specified install disk is not a disk the node can install to: "/dev/sr0" (talosctl disks lists those)',
    );
    assert.equal(
      problem({ disk: "/dev/vda1" }),
      'specified install disk is not a disk the node can install to: "/dev/vda1" (talosctl disks lists those)',
    );
    assert.equal(problem({ disk: "/dev/vdb" }), 'specified install disk is read-only: "/dev/vdb"');
    assert.equal(
      problem({ diskSelector: { busPath: "/pci0000:00/0000:00:05.0/*" } }),
      'specified install disk is read-only: "/dev/vdb"',
    );
    assert.equal(problem({ disk: "/dev/vda" }), undefined);
  });
});
