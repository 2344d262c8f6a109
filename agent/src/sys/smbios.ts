// SMBIOS structures from the firmware's table (/sys/firmware/dmi/tables/DMI): System
// Information (type 1), Processor Information (type 4) and Memory Device (type 17), with
// the field offsets of DMTF DSP0134. Each structure is a formatted area (its length in
// the header) followed by its strings, NUL-terminated, the set ending with a second NUL.

import { promises as fs } from "node:fs";
import { SystemError } from "../errors.js";

export interface SmbiosSystemInformation {
  manufacturer: string;
  productName: string;
  version: string;
  serialNumber: string;
  uuid: string;
  wakeUpType: string;
  skuNumber: string;
}

export interface SmbiosProcessor {
  socketDesignation: string;
  manufacturer: string;
  version: string;
  maxSpeed: number;
  currentSpeed: number;
  status: number;
  serialNumber: string;
  assetTag: string;
  partNumber: string;
  coreCount: number;
  coreEnabled: number;
  threadCount: number;
}

export interface SmbiosMemoryDevice {
  /** Raw field: MiB, 0x7FFF = see extendedSize, 0xFFFF = unknown, 0 = no module installed. */
  size: number;
  extendedSize: number;
  deviceLocator: string;
  bankLocator: string;
  speed: number;
  manufacturer: string;
  serialNumber: string;
  assetTag: string;
  partNumber: string;
}

export interface Smbios {
  systemInformation?: SmbiosSystemInformation;
  processors: SmbiosProcessor[];
  memoryDevices: SmbiosMemoryDevice[];
}

const wakeUpTypes = [
  "Reserved",
  "Other",
  "Unknown",
  "APM Timer",
  "Modem Ring",
  "LAN Remote",
  "Power Switch",
  "PCI PME#",
  "AC Power Restored",
];

const END_OF_TABLE = 127;

interface Structure {
  type: number;
  data: Buffer;
  strings: string[];
}

/** Splits a table into its structures; a truncated last structure ends the walk. */
export function structures(table: Buffer): Structure[] {
  const out: Structure[] = [];
  let off = 0;
  while (off + 4 <= table.length) {
    const type = table[off]!;
    const length = table[off + 1]!;
    if (length < 4 || off + length > table.length) break;
    const data = table.subarray(off, off + length);
    // The string set: up to the first double NUL after the formatted area.
    let end = off + length;
    while (end + 1 < table.length && !(table[end] === 0 && table[end + 1] === 0)) end++;
    const raw = table.subarray(off + length, end).toString("latin1");
    const strings = raw.length === 0 ? [] : raw.split("\0");
    out.push({ type, data, strings });
    off = end + 2;
    if (type === END_OF_TABLE) break;
  }
  return out;
}

/** A string field: a 1-based index into the structure's strings, 0 (or beyond the area) for none. */
function str(s: Structure, offset: number): string {
  if (offset >= s.data.length) return "";
  const index = s.data[offset]!;
  return index === 0 ? "" : (s.strings[index - 1] ?? "").trim();
}
const byte = (s: Structure, offset: number) => (offset < s.data.length ? s.data[offset]! : 0);
const word = (s: Structure, offset: number) => (offset + 2 <= s.data.length ? s.data.readUInt16LE(offset) : 0);
const dword = (s: Structure, offset: number) => (offset + 4 <= s.data.length ? s.data.readUInt32LE(offset) : 0);

/** The UUID as SMBIOS 2.6+ stores it: the first three fields little-endian, printed lower-case. */
export function smbiosUuid(b: Buffer): string {
  const hex = (x: Buffer) => x.toString("hex");
  const le = (x: Buffer) => hex(Buffer.from(x).reverse());
  return `${le(b.subarray(0, 4))}-${le(b.subarray(4, 6))}-${le(b.subarray(6, 8))}-${hex(b.subarray(8, 10))}-${hex(b.subarray(10, 16))}`;
}

function systemInformation(s: Structure): SmbiosSystemInformation {
  return {
    manufacturer: str(s, 0x04),
    productName: str(s, 0x05),
    version: str(s, 0x06),
    serialNumber: str(s, 0x07),
    uuid: s.data.length >= 0x18 ? smbiosUuid(s.data.subarray(0x08, 0x18)) : "",
    wakeUpType: wakeUpTypes[byte(s, 0x18)] ?? "Reserved",
    skuNumber: str(s, 0x19),
  };
}

function processor(s: Structure): SmbiosProcessor {
  return {
    socketDesignation: str(s, 0x04),
    manufacturer: str(s, 0x07),
    version: str(s, 0x10),
    maxSpeed: word(s, 0x14),
    currentSpeed: word(s, 0x16),
    status: byte(s, 0x18),
    serialNumber: str(s, 0x20),
    assetTag: str(s, 0x21),
    partNumber: str(s, 0x22),
    coreCount: byte(s, 0x23),
    coreEnabled: byte(s, 0x24),
    threadCount: byte(s, 0x25),
  };
}

function memoryDevice(s: Structure): SmbiosMemoryDevice {
  return {
    size: word(s, 0x0c),
    extendedSize: dword(s, 0x1c),
    deviceLocator: str(s, 0x10),
    bankLocator: str(s, 0x11),
    speed: word(s, 0x15),
    manufacturer: str(s, 0x17),
    serialNumber: str(s, 0x18),
    assetTag: str(s, 0x19),
    partNumber: str(s, 0x1a),
  };
}

export function parseSmbios(table: Buffer): Smbios {
  const out: Smbios = { processors: [], memoryDevices: [] };
  for (const s of structures(table)) {
    if (s.type === 1 && !out.systemInformation) out.systemInformation = systemInformation(s);
    else if (s.type === 4) out.processors.push(processor(s));
    else if (s.type === 17) out.memoryDevices.push(memoryDevice(s));
  }
  return out;
}

/** Where the firmware's SMBIOS table comes from. */
export interface SmbiosReader {
  /** The parsed table, or undefined where the firmware publishes none (a container, some VMs). */
  read(): Promise<Smbios | undefined>;
}

export function sysfsSmbios(file = "/sys/firmware/dmi/tables/DMI"): SmbiosReader {
  return {
    read: async () => {
      try {
        return parseSmbios(await fs.readFile(file));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw new SystemError(`reading the SMBIOS table ${file}`, { file }, { cause: err });
      }
    },
  };
}
