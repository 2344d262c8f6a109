import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { findSystemDisk } from "../../../agent/src/storage/system-disk.js";
import { fakeBlockSysfs } from "../../../agent/src/sys/block.js";

const uevent = (name: string, n: number) =>
  `MAJOR=259\nMINOR=${n}\nDEVNAME=x\nDEVTYPE=partition\nPARTN=${n}\nPARTNAME=${name}`;

describe("findSystemDisk", () => {
  it("finds the disk by its partitions' GPT names, whatever its name or numbering", () => {
    const names = ["EFI", "BIOS", "BOOT", "META", "STATE", "EPHEMERAL"];
    const attrs: Record<string, string> = {
      "sda/size": "100",
      "sda/sda1/uevent": uevent("data", 1),
      "nvme0n1/size": "100",
    };
    names.forEach((n, i) => (attrs[`nvme0n1/nvme0n1p${i + 1}/uevent`] = uevent(n, i + 1)));
    const found = findSystemDisk(fakeBlockSysfs(attrs));
    assert.deepEqual(found, {
      disk: "/dev/nvme0n1",
      partitions: {
        EFI: "/dev/nvme0n1p1",
        BIOS: "/dev/nvme0n1p2",
        BOOT: "/dev/nvme0n1p3",
        META: "/dev/nvme0n1p4",
        STATE: "/dev/nvme0n1p5",
        EPHEMERAL: "/dev/nvme0n1p6",
      },
    });
  });

  it("finds nothing on disks without system partitions (and never on the ISO's drive)", () => {
    assert.equal(
      findSystemDisk(fakeBlockSysfs({ "vda/size": "1", "vda/vda1/uevent": uevent("root", 1), "sr0/size": "1" })),
      undefined,
    );
  });
});
