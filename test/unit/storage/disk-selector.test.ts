import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { chooseInstallDisk, globMatch, matchesSelector, parseByteSize, sizeMatcher } from "../../../agent/src/storage/disk-selector.js";
import { DiskType, type DiskInfo } from "../../../agent/src/storage/disks.js";
import { InvalidInputError } from "../../../agent/src/errors.js";

function disk(over: Partial<DiskInfo>): DiskInfo {
  return { size: 0, model: "", device_name: "", name: "", serial: "", modalias: "", uuid: "", wwid: "", type: DiskType.UNKNOWN, bus_path: "", system_disk: false, subsystem: "", readonly: false, ...over };
}

const GB = 1e9;
const disks = [
  disk({ device_name: "/dev/sr0", size: 4 * GB, model: "QEMU DVD-ROM" }),
  disk({ device_name: "/dev/sda", size: 8 * GB, model: "QEMU HARDDISK", serial: "QM00001", type: DiskType.HDD, bus_path: "/pci0000:00/0000:00:01.1/ata1/host0/target0:0:0/0:0:0:0", wwid: "t10.ATA QEMU HARDDISK QM00001" }),
  disk({ device_name: "/dev/vda", size: 20 * 2 ** 30, modalias: "virtio:d00000002v00001AF4", type: DiskType.HDD, bus_path: "/pci0000:00/0000:00:04.0/virtio1" }),
  disk({ device_name: "/dev/nvme0n1", size: 512 * GB, model: "Samsung SSD 980", serial: "S64ANS0T", type: DiskType.NVME, uuid: "3a5b0e4e-1c2d-4f00-9e7b-aa00bb11cc22" }),
];

describe("install disk selection", () => {
  it("parses sizes as go-humanize does: decimal and binary units, commas, spaces", () => {
    assert.equal(parseByteSize("10GB"), 10 * GB);
    assert.equal(parseByteSize("10 GiB"), 10 * 2 ** 30);
    assert.equal(parseByteSize("1.5TB"), 1.5e12);
    assert.equal(parseByteSize("4k"), 4000);
    assert.equal(parseByteSize("1,000"), 1000);
    assert.throws(() => parseByteSize("10 parsecs"), /failed to parse disk size 10 parsecs: unhandled size name: parsecs/);
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
    const sda = disks[1]!;
    assert.equal(matchesSelector(sda, { model: "QEMU*", type: "hdd" }), true);
    assert.equal(matchesSelector(sda, { model: "QEMU*", type: "ssd" }), false);
    assert.equal(matchesSelector(sda, { busPath: "/pci0000:00/*", serial: "QM00001", size: "8GB" }), true);
    assert.equal(matchesSelector(sda, { wwid: "t10.ATA*" }), true);
    assert.equal(matchesSelector(disks[3]!, { uuid: "3a5b0e4e-*" }), true);
    assert.equal(matchesSelector(disks[2]!, { modalias: "virtio:d00000002*" }), true);
  });

  it("picks the first matching disk, never an optical drive", () => {
    assert.equal(chooseInstallDisk({ diskSelector: { size: "<= 10GB" } }, disks), "/dev/sda");
    assert.equal(chooseInstallDisk({ diskSelector: { type: "nvme" } }, disks), "/dev/nvme0n1");
    assert.equal(chooseInstallDisk({ diskSelector: { size: ">= 10GB", type: "hdd" } }, disks), "/dev/vda");
    assert.equal(chooseInstallDisk({ disk: "/dev/sda", diskSelector: { model: "Samsung*" } }, disks), "/dev/nvme0n1", "the selector wins over disk");
  });

  it("answers with Talos's errors", () => {
    assert.throws(() => chooseInstallDisk({ diskSelector: { size: ">= 1TB" } }, disks), (e: unknown) => e instanceof InvalidInputError && e.message === "no disk found matching provided parameters");
    assert.throws(() => chooseInstallDisk({ disk: "/dev/sdz" }, disks), (e: unknown) => e instanceof InvalidInputError && e.message === 'specified install disk does not exist: "/dev/sdz"');
    assert.equal(chooseInstallDisk({ disk: "/dev/vda", diskSelector: {} }, disks), "/dev/vda", "an empty selector leaves the disk path in charge");
  });
});
