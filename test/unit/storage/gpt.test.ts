import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { openBlockTarget } from "../../../agent/src/sys/blockdev.js";
import { guidFromBytes, guidToBytes, planTable, readGpt, writeGpt } from "../../../agent/src/storage/gpt.js";
import { systemLayout } from "../../../agent/src/storage/layout.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-gpt-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

function sparse(name: string, bytes: number): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, "");
  fs.truncateSync(file, bytes);
  return file;
}

interface SfdiskJson {
  partitiontable: {
    label: string;
    id: string;
    sectorsize: number;
    partitions: {
      node: string;
      start: number;
      size: number;
      type: string;
      uuid: string;
      name: string;
      attrs?: string;
    }[];
  };
}

describe("GPT writer", () => {
  it("encodes GUIDs mixed-endian", () => {
    const guid = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B";
    assert.equal(guidToBytes(guid).toString("hex"), "28732ac11ff8d211ba4b00a0c93ec93b");
    assert.equal(guidFromBytes(guidToBytes(guid)), guid);
  });

  it("writes the system layout that sfdisk reads back, in order, with names, types, sizes and attributes", async () => {
    const file = sparse("disk.img", 10 * GiB);
    const dev = await openBlockTarget(file);
    const table = planTable(dev.sizeBytes, 512, systemLayout());
    await writeGpt(dev, table);
    await dev.close();
    const json = JSON.parse(execFileSync("sfdisk", ["--json", file], { encoding: "utf8" })) as SfdiskJson;
    const pt = json.partitiontable;
    assert.equal(pt.label, "gpt");
    assert.equal(pt.id, table.diskGuid);
    assert.deepEqual(
      pt.partitions.map((p) => p.name),
      ["EFI", "BIOS", "BOOT", "META", "STATE", "EPHEMERAL"],
    );
    assert.deepEqual(
      pt.partitions.map((p) => p.type),
      [
        "C12A7328-F81F-11D2-BA4B-00A0C93EC93B",
        "21686148-6449-6E6F-744E-656564454649",
        "0FC63DAF-8483-4772-8E79-3D69D8477DE4",
        "0FC63DAF-8483-4772-8E79-3D69D8477DE4",
        "0FC63DAF-8483-4772-8E79-3D69D8477DE4",
        "0FC63DAF-8483-4772-8E79-3D69D8477DE4",
      ],
    );
    assert.deepEqual(
      pt.partitions.slice(0, 5).map((p) => (p.size * 512) / MiB),
      [100, 1, 1000, 1, 100],
    );
    assert.equal(pt.partitions[1]!.attrs, "LegacyBIOSBootable");
    assert.equal(pt.partitions[0]!.attrs, undefined);
    for (const p of pt.partitions) assert.equal((p.start * 512) % MiB, 0, `${p.name} starts on a MiB boundary`);
    const last = pt.partitions[5]!;
    assert.equal(last.start + last.size - 1, (10 * GiB) / 512 - 34, "EPHEMERAL takes the rest, up to the backup table");
    // sfdisk --verify checks both headers, both entry arrays and the protective MBR.
    const verify = execFileSync("sfdisk", ["--verify", file], { encoding: "utf8" });
    assert.match(verify, /No errors detected/);
    const dumped = execFileSync("sfdisk", ["--dump", file], { encoding: "utf8" });
    assert.match(dumped, /^label: gpt$/m);
    assert.match(dumped, new RegExp(`^label-id: ${table.diskGuid}$`, "m"));
    assert.match(
      dumped,
      /type=21686148-6449-6E6F-744E-656564454649, uuid=[0-9A-F-]{36}, name="BIOS", attrs="LegacyBIOSBootable"$/m,
    );
    assert.match(dumped, /^first-lba: 34$/m);
    const probed = execFileSync("blkid", ["-p", "-o", "export", file], { encoding: "utf8" });
    assert.match(probed, /^PTTYPE=gpt$/m);
    assert.match(probed, new RegExp(`^PTUUID=${table.diskGuid.toLowerCase()}$`, "m"));
    const mbr = Buffer.alloc(512);
    const fd = fs.openSync(file, "r");
    fs.readSync(fd, mbr, 0, 512, 0);
    fs.closeSync(fd);
    assert.equal(mbr[450], 0xee);
    assert.equal(mbr.readUInt16LE(510), 0xaa55);
  });

  it("reads its own table back, and the backup when the primary is damaged", async () => {
    const file = sparse("roundtrip.img", 2 * GiB);
    const dev = await openBlockTarget(file);
    const table = planTable(dev.sizeBytes, 512, systemLayout());
    await writeGpt(dev, table);
    assert.deepEqual(await readGpt(dev), table);
    await dev.write(512 + 20, Buffer.from([1, 2, 3])); // corrupt the primary header
    assert.deepEqual(await readGpt(dev), table, "falls back to the backup header");
    await dev.write(dev.sizeBytes - 512 + 20, Buffer.from([1, 2, 3]));
    assert.equal(await readGpt(dev), undefined, "neither copy valid");
    await writeGpt(dev, table);
    await dev.write(2 * 512, Buffer.from([9])); // a primary entry array that does not match its CRC
    assert.deepEqual(await readGpt(dev), table, "entries checked against the header's CRC");
    await dev.close();
  });

  it("refuses a disk too small for the layout", () => {
    assert.throws(() => planTable(1 * GiB, 512, systemLayout()), /too small for partition BOOT/);
    assert.throws(() => planTable(1203 * MiB + 33 * 512, 512, systemLayout()), /too small for partition EPHEMERAL/);
  });
});
