import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { planTable, readGpt, writeGpt } from "../../../agent/src/storage/gpt.js";
import { growLastPartition } from "../../../agent/src/storage/grow.js";
import { systemLayout } from "../../../agent/src/storage/layout.js";
import { openBlockTarget } from "../../../agent/src/sys/blockdev.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-grow-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
const MiB = 1024 * 1024;

test("EPHEMERAL grows to the end of a bigger disk: backup GPT moved, MBR boot code kept, once", async () => {
  const file = path.join(dir, "disk.img");
  fs.writeFileSync(file, "");
  fs.truncateSync(file, 1400 * MiB);
  let dev = await openBlockTarget(file);
  const table = planTable(dev.sizeBytes, 512, systemLayout());
  await writeGpt(dev, table);
  await dev.write(0, Buffer.alloc(440, 0xab)); // stands for GRUB's boot code
  await dev.close();

  fs.truncateSync(file, 3000 * MiB);
  dev = await openBlockTarget(file);
  const grown = await growLastPartition(dev, "EPHEMERAL");
  const sectors = BigInt((3000 * MiB) / 512);
  assert.deepEqual(grown, { number: 6, grown: true, lastLba: sectors - 34n });
  assert.deepEqual(await growLastPartition(dev, "EPHEMERAL"), { number: 6, grown: false, lastLba: sectors - 34n });
  assert.equal(await growLastPartition(dev, "STATE"), undefined, "only the last partition grows");
  const back = await readGpt(dev);
  assert.deepEqual(
    back?.partitions.map((p) => [p.name, p.firstLba, p.lastLba]),
    table.partitions.map((p) => [p.name, p.firstLba, p.name === "EPHEMERAL" ? sectors - 34n : p.lastLba]),
  );
  assert.deepEqual(await dev.read(0, 440), Buffer.alloc(440, 0xab));
  await dev.close();
  // util-linux agrees: a valid table with both headers where they belong.
  const dump = JSON.parse(execFileSync("sfdisk", ["--json", file], { encoding: "utf8" })) as {
    partitiontable: { lastlba: number; partitions: { size: number }[] };
  };
  assert.equal(dump.partitiontable.lastlba, Number(sectors - 34n));
  assert.equal(execFileSync("sfdisk", ["--verify", file], { encoding: "utf8" }).includes("No errors detected"), true);
});
