import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { partitionChanges } from "../../../agent/src/sys/disk-lock.js";

const MiB = 1024 * 1024;
const part = (number: number, startMiB: number, sizeMiB: number) => ({
  number,
  startBytes: startMiB * MiB,
  sizeBytes: sizeMiB * MiB,
});

describe("partitionChanges", () => {
  it("keeps equal partitions, removes those that moved, resized or went, adds the rest", () => {
    const current = [part(1, 1, 100), part(2, 101, 1), part(3, 102, 50), part(7, 500, 10)];
    const wanted = [part(1, 1, 100), part(2, 101, 2), part(3, 103, 50), part(4, 200, 10)];
    assert.deepEqual(partitionChanges(current, wanted), {
      remove: [2, 3, 7],
      add: [part(2, 101, 2), part(3, 103, 50), part(4, 200, 10)],
    });
  });

  it("changes nothing when the kernel already shows the table", () => {
    const table = [part(1, 1, 100), part(2, 101, 1)];
    assert.deepEqual(partitionChanges(table, table), { remove: [], add: [] });
  });

  it("adds every partition to a disk the kernel shows none of", () => {
    assert.deepEqual(partitionChanges([], [part(1, 1, 100)]), { remove: [], add: [part(1, 1, 100)] });
  });
});
