// Namespace `hardware`: what the firmware's SMBIOS table says about the machine.
// Every spec field is omitempty in Talos's YAML, so specs hold only the fields that are set.

import { defineResource, type ResourceDefinition } from "../definitions.js";

export const HARDWARE_NAMESPACE = "hardware";

// --- SystemInformations.hardware.talos.dev (id "systeminformation") ---
export const SystemInformationType = "SystemInformations.hardware.talos.dev";
export const SystemInformationId = "systeminformation";
export interface SystemInformationSpec {
  manufacturer?: string;
  productName?: string;
  version?: string;
  serialnumber?: string;
  uuid?: string;
  wakeUpType?: string;
  skuNumber?: string;
}
export const systemInformationDefinition = defineResource<SystemInformationSpec>({
  type: SystemInformationType,
  defaultNamespace: HARDWARE_NAMESPACE,
  printColumns: [
    { name: "Manufacturer", jsonPath: "{.manufacturer}" },
    { name: "ProductName", jsonPath: "{.productName}" },
    { name: "Version", jsonPath: "{.version}" },
    { name: "SerialNumber", jsonPath: "{.serialnumber}" },
    { name: "UUID", jsonPath: "{.uuid}" },
    { name: "WakeUpType", jsonPath: "{.wakeUpType}" },
    { name: "SKUNumber", jsonPath: "{.skuNumber}" },
  ],
  protoSpecType: "talos.resource.definitions.hardware.SystemInformationSpec",
  toProto: (s) => ({
    manufacturer: s.manufacturer ?? "",
    product_name: s.productName ?? "",
    version: s.version ?? "",
    serial_number: s.serialnumber ?? "",
    uuid: s.uuid ?? "",
    wake_up_type: s.wakeUpType ?? "",
    sku_number: s.skuNumber ?? "",
  }),
});

// --- Processors.hardware.talos.dev (id = socket designation, spaces as "-") ---
export const ProcessorType = "Processors.hardware.talos.dev";
export interface ProcessorSpec {
  socket?: string;
  manufacturer?: string;
  productName?: string;
  maxSpeedMhz?: number;
  bootSpeedMhz?: number;
  status?: number;
  serialNumber?: string;
  assetTag?: string;
  partNumber?: string;
  coreCount?: number;
  coreEnabled?: number;
  threadCount?: number;
}
export const processorDefinition = defineResource<ProcessorSpec>({
  type: ProcessorType,
  defaultNamespace: HARDWARE_NAMESPACE,
  aliases: ["cpus", "cpu"],
  printColumns: [
    { name: "Manufacturer", jsonPath: "{.manufacturer}" },
    { name: "Model", jsonPath: "{.productName}" },
    { name: "Cores", jsonPath: "{.coreCount}" },
    { name: "Threads", jsonPath: "{.threadCount}" },
  ],
  protoSpecType: "talos.resource.definitions.hardware.ProcessorSpec",
  toProto: (s) => ({
    socket: s.socket ?? "",
    manufacturer: s.manufacturer ?? "",
    product_name: s.productName ?? "",
    max_speed: s.maxSpeedMhz ?? 0,
    boot_speed: s.bootSpeedMhz ?? 0,
    status: s.status ?? 0,
    serial_number: s.serialNumber ?? "",
    asset_tag: s.assetTag ?? "",
    part_number: s.partNumber ?? "",
    core_count: s.coreCount ?? 0,
    core_enabled: s.coreEnabled ?? 0,
    thread_count: s.threadCount ?? 0,
  }),
});

// --- MemoryModules.hardware.talos.dev (id = device locator, spaces as "-") ---
export const MemoryModuleType = "MemoryModules.hardware.talos.dev";
export interface MemoryModuleSpec {
  sizeMiB?: number;
  deviceLocator?: string;
  bankLocator?: string;
  speed?: number;
  manufacturer?: string;
  serialNumber?: string;
  assetTag?: string;
  productName?: string;
}
export const memoryModuleDefinition = defineResource<MemoryModuleSpec>({
  type: MemoryModuleType,
  defaultNamespace: HARDWARE_NAMESPACE,
  aliases: ["memorymodules", "ram"],
  printColumns: [
    { name: "Manufacturer", jsonPath: "{.manufacturer}" },
    { name: "Model", jsonPath: "{.productName}" },
    { name: "SizeMiB", jsonPath: "{.sizeMiB}" },
  ],
  protoSpecType: "talos.resource.definitions.hardware.MemoryModuleSpec",
  toProto: (s) => ({
    size: s.sizeMiB ?? 0,
    device_locator: s.deviceLocator ?? "",
    bank_locator: s.bankLocator ?? "",
    speed: s.speed ?? 0,
    manufacturer: s.manufacturer ?? "",
    serial_number: s.serialNumber ?? "",
    asset_tag: s.assetTag ?? "",
    product_name: s.productName ?? "",
  }),
});

export const hardwareDefinitions: readonly ResourceDefinition<never>[] = [
  systemInformationDefinition,
  processorDefinition,
  memoryModuleDefinition,
];
