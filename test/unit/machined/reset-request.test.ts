import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidInputError, NotFoundError } from "../../../agent/src/errors.js";
import { resetOptions } from "../../../agent/src/machined/apis.js";

const disks = [
  { device_name: "/dev/vda", readonly: false },
  { device_name: "/dev/vdb", readonly: false },
  { device_name: "/dev/sr0", readonly: true },
];

test("Reset's mode, user disks and graceful become the sequence's options", () => {
  assert.deepEqual(resetOptions({}, disks, "/dev/vda"), {
    labels: [],
    reboot: false,
    mode: "all",
    userDisks: [],
    graceful: false,
  });
  assert.deepEqual(resetOptions({ mode: 2, user_disks_to_wipe: ["/dev/vdb"], reboot: true }, disks, "/dev/vda"), {
    labels: [],
    reboot: true,
    mode: "userDisks",
    userDisks: ["/dev/vdb"],
    graceful: false,
  });
  assert.deepEqual(
    resetOptions(
      {
        mode: 1,
        system_partitions_to_wipe: [
          { label: "STATE", wipe: true },
          { label: "EPHEMERAL", wipe: false },
        ],
      },
      disks,
      "/dev/vda",
    ),
    { labels: ["STATE"], reboot: false, mode: "systemDisk", userDisks: [], graceful: false },
  );
  assert.deepEqual(resetOptions({ graceful: true }, disks, "/dev/vda"), {
    labels: [],
    reboot: false,
    mode: "all",
    userDisks: [],
    graceful: true,
  });
});

test("Reset refuses what Talos refuses, with the reason", () => {
  assert.throws(
    () => resetOptions({ mode: 1, user_disks_to_wipe: ["/dev/vdb"] }, disks, "/dev/vda"),
    (e) => e instanceof InvalidInputError && /SYSTEM_DISK doesn't support UserDisksToWipe/.test(e.message),
  );
  assert.throws(
    () => resetOptions({ mode: 2, system_partitions_to_wipe: [{ label: "STATE", wipe: true }] }, disks, "/dev/vda"),
    (e) => e instanceof InvalidInputError && /USER_DISKS doesn't support SystemPartitionsToWipe/.test(e.message),
  );
  assert.throws(
    () => resetOptions({ user_disks_to_wipe: ["/dev/vdz"] }, disks, "/dev/vda"),
    (e) => e instanceof NotFoundError && /device \/dev\/vdz wasn't found/.test(e.message),
  );
  assert.throws(
    () => resetOptions({ user_disks_to_wipe: ["/dev/sr0"] }, disks, "/dev/vda"),
    (e) => e instanceof InvalidInputError && /is readonly/.test(e.message),
  );
  assert.throws(
    () => resetOptions({ user_disks_to_wipe: ["/dev/vda"] }, disks, "/dev/vda"),
    (e) => e instanceof InvalidInputError && /is the system disk/.test(e.message),
  );
  assert.throws(() => resetOptions({ mode: 7 }, disks, "/dev/vda"), InvalidInputError);
  assert.throws(
    () => resetOptions({ system_partitions_to_wipe: [{ label: "BOOT", wipe: true }] }, disks, "/dev/vda"),
    InvalidInputError,
  );
});
