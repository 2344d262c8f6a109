import assert from "node:assert/strict";
import { test } from "node:test";
import { DiskType, listDisks } from "../../../agent/src/storage/disks.js";
import { fakeBlockSysfs } from "../../../agent/src/sys/block.js";

const sysfs = fakeBlockSysfs(
  {
    "loop0/size": "2048",
    "sr0/size": "2097152",
    "sr0/ro": "1",
    "sg0/size": "8",
    "dm-0/size": "2048",
    "md0/size": "2048",
    "ram0/size": "2048",
    "sda/size": "2097152",
    "sda/ro": "0",
    "sda/queue/rotational": "1",
    "sda/device/model": "QEMU HARDDISK   ",
    "sda/device/serial": "S123",
    "sda/wwid": "t10.ATA     QEMU HARDDISK",
    "nvme0n1/size": "1000",
    "nvme0n1/ro": "1",
    "nvme0n1/queue/rotational": "0",
    "vdb/size": "0",
    "mmcblk0/size": "64",
    "mmcblk0/device/type": "SD",
    "mmcblk0/device/name": "SC16G",
  },
  {
    sda: "/sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda",
    "sda/subsystem": "/sys/class/block",
  },
);

test("lists real disks with their sysfs attributes and skips what Talos's disk list skips: optical drives, SCSI generic nodes, virtual or empty devices", () => {
  const disks = listDisks(sysfs, { systemDisk: "sda" });
  assert.deepEqual(
    disks.map((d) => d.device_name),
    ["/dev/mmcblk0", "/dev/nvme0n1", "/dev/sda"],
  );
  const sda = disks.find((d) => d.device_name === "/dev/sda")!;
  assert.equal(sda.size, 2097152 * 512);
  assert.equal(sda.model, "QEMU HARDDISK");
  assert.equal(sda.serial, "S123");
  assert.equal(sda.type, DiskType.HDD);
  assert.equal(sda.bus_path, "/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0");
  assert.equal(sda.subsystem, "/sys/class/block");
  assert.equal(sda.system_disk, true);
  assert.equal(sda.readonly, false);
  const nvme = disks.find((d) => d.device_name === "/dev/nvme0n1")!;
  assert.equal(nvme.type, DiskType.NVME);
  assert.equal(nvme.readonly, true);
  assert.equal(nvme.system_disk, false);
  const sd = disks.find((d) => d.device_name === "/dev/mmcblk0")!;
  assert.equal(sd.type, DiskType.SD);
  assert.equal(sd.name, "SC16G");
});
