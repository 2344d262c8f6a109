import assert from "node:assert/strict";
import { test } from "node:test";
import { Observed } from "../../../../agent/src/controllers/index.js";
import { SystemInfoController } from "../../../../agent/src/controllers/hardware/system-info.js";
import { MetaKeysController } from "../../../../agent/src/controllers/runtime/meta-keys.js";
import {
  HARDWARE_NAMESPACE,
  MemoryModuleType,
  ProcessorType,
  SystemInformationType,
} from "../../../../agent/src/resources/catalog/hardware.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { parseSmbios, smbiosUuid, sysfsSmbios } from "../../../../agent/src/sys/smbios.js";

/** One SMBIOS structure: header, formatted area (`fields` written at their DSP0134 offsets), strings. */
function structure(
  type: number,
  length: number,
  fields: [offset: number, size: 1 | 2 | 4 | 16, value: number | Buffer][],
  strings: string[],
): Buffer {
  const area = Buffer.alloc(length);
  area[0] = type;
  area[1] = length;
  area.writeUInt16LE(0x100 + type, 2);
  for (const [offset, size, value] of fields) {
    if (Buffer.isBuffer(value)) value.copy(area, offset);
    else if (size === 1) area[offset] = value;
    else if (size === 2) area.writeUInt16LE(value, offset);
    else area.writeUInt32LE(value, offset);
  }
  const tail = strings.length ? Buffer.from(strings.join("\0") + "\0\0", "latin1") : Buffer.from([0, 0]);
  return Buffer.concat([area, tail]);
}

const uuidBytes = Buffer.from("33221100554477668899aabbccddeeff", "hex");
const table = Buffer.concat([
  structure(0, 0x18, [[4, 1, 1]], ["SeaBIOS"]),
  // System Information: manufacturer 1, product 2, version 3, serial 4, UUID, wake-up 6 (Power Switch), SKU 5
  structure(
    1,
    0x1b,
    [
      [4, 1, 1],
      [5, 1, 2],
      [6, 1, 3],
      [7, 1, 4],
      [8, 16, uuidBytes],
      [0x18, 1, 6],
      [0x19, 1, 5],
      [0x1a, 1, 0],
    ],
    ["QEMU", "Standard PC (Q35 + ICH9, 2009)", "pc-q35-7.2", "SN-1", "SKU 9"],
  ),
  // Processor, populated (status 0x41), socket "CPU 0"
  structure(
    4,
    0x30,
    [
      [4, 1, 1],
      [7, 1, 2],
      [0x10, 1, 3],
      [0x14, 2, 4000],
      [0x16, 2, 2600],
      [0x18, 1, 0x41],
      [0x20, 1, 0],
      [0x21, 1, 4],
      [0x22, 1, 5],
      [0x23, 1, 8],
      [0x24, 1, 6],
      [0x25, 1, 16],
    ],
    ["CPU 0", "QEMU", "pc-q35-7.2 CPU", "Asset 1", "Part 1"],
  ),
  // Processor, empty socket (status 0): listed with an empty spec
  structure(
    4,
    0x30,
    [
      [4, 1, 1],
      [0x18, 1, 0],
    ],
    ["CPU 1"],
  ),
  // Memory Device 1: 0x7FFF → extended size 32768 MiB
  structure(
    17,
    0x28,
    [
      [0x0c, 2, 0x7fff],
      [0x10, 1, 1],
      [0x11, 1, 2],
      [0x15, 2, 3200],
      [0x17, 1, 3],
      [0x18, 1, 4],
      [0x19, 1, 5],
      [0x1a, 1, 6],
      [0x1c, 4, 32768],
    ],
    ["DIMM 0", "BANK 0", "Micron", "SER0", "Tag0", "PN0"],
  ),
  // Memory Device 2: an empty slot (size 0)
  structure(
    17,
    0x28,
    [
      [0x0c, 2, 0],
      [0x10, 1, 1],
    ],
    ["DIMM 1"],
  ),
  structure(127, 4, [], []),
  Buffer.from("trailing bytes after the end-of-table structure"),
]);

test("SMBIOS: types 1, 4 and 17 at their offsets, strings by index, the 2.6+ UUID byte order; the walk stops at type 127", () => {
  const s = parseSmbios(table);
  assert.deepEqual(s.systemInformation, {
    manufacturer: "QEMU",
    productName: "Standard PC (Q35 + ICH9, 2009)",
    version: "pc-q35-7.2",
    serialNumber: "SN-1",
    uuid: "00112233-4455-6677-8899-aabbccddeeff",
    wakeUpType: "Power Switch",
    skuNumber: "SKU 9",
  });
  assert.equal(s.processors.length, 2);
  assert.deepEqual(s.processors[0], {
    socketDesignation: "CPU 0",
    manufacturer: "QEMU",
    version: "pc-q35-7.2 CPU",
    maxSpeed: 4000,
    currentSpeed: 2600,
    status: 0x41,
    serialNumber: "",
    assetTag: "Asset 1",
    partNumber: "Part 1",
    coreCount: 8,
    coreEnabled: 6,
    threadCount: 16,
  });
  assert.equal(s.memoryDevices.length, 2);
  assert.deepEqual(s.memoryDevices[0], {
    size: 0x7fff,
    extendedSize: 32768,
    deviceLocator: "DIMM 0",
    bankLocator: "BANK 0",
    speed: 3200,
    manufacturer: "Micron",
    serialNumber: "SER0",
    assetTag: "Tag0",
    partNumber: "PN0",
  });
  assert.equal(smbiosUuid(Buffer.alloc(16)), "00000000-0000-0000-0000-000000000000");
});

test("SMBIOS reader: a machine without the table (a container, this sandbox) reads as none", async () => {
  assert.equal(await sysfsSmbios("/nonexistent/DMI").read(), undefined);
});

test("SystemInfoController: SystemInformation, Processors and MemoryModules as Talos names and fills them; META 0x0f overrides the UUID", async (t) => {
  const state = new ResourceState();
  registerCatalog(state);
  const runtime = new ControllerRuntime(state);
  const meta = new Observed<ReadonlyMap<number, string>>(new Map());
  let reads = 0;
  runtime.register(new MetaKeysController(meta));
  runtime.register(new SystemInfoController({ read: async () => (reads++, parseSmbios(table)) }));
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  await runtime.whenIdle();
  const list = (type: string) => state.list(HARDWARE_NAMESPACE, type).map((r) => [r.metadata.id, r.spec]);
  assert.deepEqual(list(SystemInformationType), [
    [
      "systeminformation",
      {
        manufacturer: "QEMU",
        productName: "Standard PC (Q35 + ICH9, 2009)",
        version: "pc-q35-7.2",
        serialnumber: "SN-1",
        uuid: "00112233-4455-6677-8899-aabbccddeeff",
        wakeUpType: "Power Switch",
        skuNumber: "SKU 9",
      },
    ],
  ]);
  assert.deepEqual(list(ProcessorType), [
    [
      "CPU-0",
      {
        socket: "CPU 0",
        manufacturer: "QEMU",
        productName: "pc-q35-7.2 CPU",
        maxSpeedMhz: 4000,
        bootSpeedMhz: 2600,
        status: 65,
        assetTag: "Asset 1",
        partNumber: "Part 1",
        coreCount: 8,
        coreEnabled: 6,
        threadCount: 16,
      },
    ],
    ["CPU-1", {}],
  ]);
  assert.deepEqual(list(MemoryModuleType), [
    [
      "DIMM-0",
      {
        sizeMiB: 32768,
        deviceLocator: "DIMM 0",
        bankLocator: "BANK 0",
        speed: 3200,
        manufacturer: "Micron",
        serialNumber: "SER0",
        assetTag: "Tag0",
        productName: "PN0",
      },
    ],
    ["DIMM-1", {}],
  ]);
  meta.set(new Map([[0x0f, "00000000-0000-0000-0000-000000000001"]]));
  await runtime.whenIdle();
  assert.equal(
    (state.list(HARDWARE_NAMESPACE, SystemInformationType)[0]!.spec as { uuid: string }).uuid,
    "00000000-0000-0000-0000-000000000001",
  );
  assert.equal(reads, 1, "the table is read once");
});
