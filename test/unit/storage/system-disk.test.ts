import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { findInstalledSystemDisk, findSystemDisk } from "../../../agent/src/storage/system-disk.js";
import { fakeBlockSysfs } from "../../../agent/src/sys/block.js";

const uevent = (name: string, n: number) => `MAJOR=259\nMINOR=${n}\nDEVNAME=x\nDEVTYPE=partition\nPARTN=${n}\nPARTNAME=${name}`;

describe("findSystemDisk", () => {
  it("finds the disk by its partitions' GPT names, whatever its name or numbering", () => {
    const names = ["EFI", "BIOS", "BOOT", "META", "STATE", "EPHEMERAL"];
    const attrs: Record<string, string> = { "sda/size": "100", "sda/sda1/uevent": uevent("data", 1), "nvme0n1/size": "100" };
    names.forEach((n, i) => (attrs[`nvme0n1/nvme0n1p${i + 1}/uevent`] = uevent(n, i + 1)));
    const found = findSystemDisk(fakeBlockSysfs(attrs));
    assert.deepEqual(found, {
      disk: "/dev/nvme0n1",
      partitions: { EFI: "/dev/nvme0n1p1", BIOS: "/dev/nvme0n1p2", BOOT: "/dev/nvme0n1p3", META: "/dev/nvme0n1p4", STATE: "/dev/nvme0n1p5", EPHEMERAL: "/dev/nvme0n1p6" },
    });
  });

  it("finds nothing on disks without system partitions (and never on the ISO's drive)", () => {
    assert.equal(findSystemDisk(fakeBlockSysfs({ "vda/size": "1", "vda/vda1/uevent": uevent("root", 1), "sr0/size": "1" })), undefined);
  });
});

describe("findInstalledSystemDisk", () => {
  const names = ["EFI", "BIOS", "BOOT", "META", "STATE", "EPHEMERAL"];
  const addPartitions = (attrs: Record<string, string>) => names.forEach((n, i) => (attrs[`vda/vda${i + 1}/uevent`] = uevent(n, i + 1)));

  it("looks once when the kernel shows the partitions: no re-read", async () => {
    const attrs: Record<string, string> = { "vda/size": "100" };
    addPartitions(attrs);
    let rereads = 0;
    const found = await findInstalledSystemDisk(fakeBlockSysfs(attrs), async () => void rereads++, () => undefined);
    assert.equal(rereads, 0);
    assert.equal(found?.partitions.STATE, "/dev/vda5");
  });

  it("when the kernel shows none, says so, reads the table again and finds them", async () => {
    const attrs: Record<string, string> = { "vda/size": "100" };
    const events: string[] = [];
    const found = await findInstalledSystemDisk(
      fakeBlockSysfs(attrs),
      async () => {
        events.push("reread");
        addPartitions(attrs);
      },
      () => events.push("missing"),
    );
    assert.deepEqual(events, ["missing", "reread"]);
    assert.equal(found?.partitions.META, "/dev/vda4");
  });
});
