import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  HARDWARE_NAMESPACE,
  MemoryModuleType,
  ProcessorType,
  SystemInformationId,
  SystemInformationType,
  type MemoryModuleSpec,
  type ProcessorSpec,
  type SystemInformationSpec,
} from "../../resources/catalog/hardware.js";
import { MetaKeyType, metaKeyId, RUNTIME_NAMESPACE, type MetaKeySpec } from "../../resources/catalog/runtime.js";
import type { Smbios, SmbiosMemoryDevice, SmbiosProcessor, SmbiosReader } from "../../sys/smbios.js";

/** META key whose value replaces the SMBIOS UUID (Talos's UUIDOverride). */
export const UUID_OVERRIDE_TAG = 0x0f;

const PROCESSOR_POPULATED = 0x40;

/** Talos's specs keep only the fields that are set (all are omitempty). */
function setOnly<T extends object>(spec: T): T {
  // The same object less some optional keys: still a T.
  return Object.fromEntries(Object.entries(spec).filter(([, v]) => v !== "" && v !== 0 && v !== undefined)) as T;
}

/** An unpopulated socket is listed, with nothing in it. */
export function processorSpec(p: SmbiosProcessor): ProcessorSpec {
  if (!(p.status & PROCESSOR_POPULATED)) return {};
  return setOnly({
    socket: p.socketDesignation,
    manufacturer: p.manufacturer,
    productName: p.version,
    maxSpeedMhz: p.maxSpeed,
    bootSpeedMhz: p.currentSpeed,
    status: p.status,
    serialNumber: p.serialNumber,
    assetTag: p.assetTag,
    partNumber: p.partNumber,
    coreCount: p.coreCount,
    coreEnabled: p.coreEnabled,
    threadCount: p.threadCount,
  });
}

/** An empty slot (size 0) or one of unknown size (0xFFFF) is listed, with nothing in it; 0x7FFF means the size is in extendedSize. */
export function memoryModuleSpec(m: SmbiosMemoryDevice): MemoryModuleSpec {
  if (m.size === 0 || m.size === 0xffff) return {};
  return setOnly({
    sizeMiB: m.size === 0x7fff ? m.extendedSize : m.size,
    deviceLocator: m.deviceLocator,
    bankLocator: m.bankLocator,
    speed: m.speed,
    manufacturer: m.manufacturer,
    serialNumber: m.serialNumber,
    assetTag: m.assetTag,
    productName: m.partNumber,
  });
}

/** SystemInformation, Processors and MemoryModules from the firmware's SMBIOS table (read once), the UUID overridable through META. */
export class SystemInfoController implements Controller {
  readonly name = "hardware.SystemInfoController";
  readonly inputs = [{ namespace: RUNTIME_NAMESPACE, type: MetaKeyType, kind: "weak" as const }];
  readonly outputs = [{ type: ProcessorType }, { type: MemoryModuleType }, { type: SystemInformationType }];
  private table: Smbios | undefined;
  private read = false;

  constructor(private readonly smbios: SmbiosReader) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    if (!this.read) {
      this.table = await this.smbios.read();
      this.read = true;
    }
    const table = this.table;
    if (!table) return;
    const override = ctx.get<MetaKeySpec>(RUNTIME_NAMESPACE, MetaKeyType, metaKeyId(UUID_OVERRIDE_TAG))?.spec.value;
    if (table.systemInformation) {
      const si = table.systemInformation;
      const spec: SystemInformationSpec = setOnly({
        manufacturer: si.manufacturer,
        productName: si.productName,
        version: si.version,
        serialnumber: si.serialNumber,
        uuid: override || si.uuid,
        wakeUpType: si.wakeUpType,
        skuNumber: si.skuNumber,
      });
      ctx.modify<SystemInformationSpec>(HARDWARE_NAMESPACE, SystemInformationType, SystemInformationId, () => spec);
    }
    for (const p of table.processors) {
      ctx.modify<ProcessorSpec>(HARDWARE_NAMESPACE, ProcessorType, p.socketDesignation.replaceAll(" ", "-"), () =>
        processorSpec(p),
      );
    }
    for (const m of table.memoryDevices) {
      ctx.modify<MemoryModuleSpec>(HARDWARE_NAMESPACE, MemoryModuleType, m.deviceLocator.replaceAll(" ", "-"), () =>
        memoryModuleSpec(m),
      );
    }
  }
}
