// Namespace `runtime`: services, machine status, META keys, platform metadata,
// block devices and volumes.

import { autoProto, enumValue, netIP } from "../codec.js";
import { defineResource, type ResourceDefinition } from "../definitions.js";
import { goDuration } from "../go-duration.js";
import { marshalGoYaml } from "../go-yaml.js";

export const RUNTIME_NAMESPACE = "runtime";

// --- Services.v1alpha1.talos.dev (id = service name) ---
export const ServiceType = "Services.v1alpha1.talos.dev";
export interface ServiceSpec {
  running: boolean;
  healthy: boolean;
  unknown: boolean;
}
export const serviceDefinition = defineResource<ServiceSpec>({
  type: ServiceType,
  defaultNamespace: RUNTIME_NAMESPACE,
  aliases: ["svc"],
  printColumns: [
    { name: "Running", jsonPath: "{.running}" },
    { name: "Healthy", jsonPath: "{.healthy}" },
    { name: "Health Unknown", jsonPath: "{.unknown}" },
  ],
  protoSpecType: "talos.resource.definitions.v1alpha1.ServiceSpec",
  toProto: (s) => ({ running: s.running, healthy: s.healthy, unknown: s.unknown }),
});

// --- MachineStatuses.runtime.talos.dev (id "machine") ---
export const MachineStatusType = "MachineStatuses.runtime.talos.dev";
export const MachineStatusId = "machine";
export type MachineStage =
  | "unknown"
  | "booting"
  | "installing"
  | "maintenance"
  | "running"
  | "rebooting"
  | "shutting down"
  | "resetting"
  | "upgrading";
export interface MachineStatusSpec {
  stage: MachineStage;
  status: { ready: boolean; unmetConditions: { name: string; reason: string }[] };
}
export const machineStages: Record<MachineStage, number> = {
  unknown: 0,
  booting: 1,
  installing: 2,
  maintenance: 3,
  running: 4,
  rebooting: 5,
  "shutting down": 6,
  resetting: 7,
  upgrading: 8,
};
export const machineStatusDefinition = defineResource<MachineStatusSpec>({
  type: MachineStatusType,
  defaultNamespace: RUNTIME_NAMESPACE,
  printColumns: [
    { name: "Stage", jsonPath: "{.stage}" },
    { name: "Ready", jsonPath: "{.status.ready}" },
  ],
  protoSpecType: "talos.resource.definitions.runtime.MachineStatusSpec",
  toProto: (s) => ({
    stage: enumValue(machineStages, s.stage, "machine stage"),
    status: {
      ready: s.status.ready,
      unmet_conditions: s.status.unmetConditions.map((c) => ({ name: c.name, reason: c.reason })),
    },
  }),
});

// --- MetaKeys.runtime.talos.dev (id = "0x" + two hex digits of the tag) ---
export const MetaKeyType = "MetaKeys.runtime.talos.dev";
export interface MetaKeySpec {
  value: string;
}
export function metaKeyId(tag: number): string {
  return "0x" + tag.toString(16).padStart(2, "0");
}
export const metaKeyDefinition = defineResource<MetaKeySpec>({
  type: MetaKeyType,
  defaultNamespace: RUNTIME_NAMESPACE,
  aliases: ["meta"],
  printColumns: [{ name: "Value", jsonPath: "{.value}" }],
  protoSpecType: "talos.resource.definitions.runtime.MetaKeySpec",
  toProto: (s) => ({ value: s.value }),
});

// --- PlatformMetadatas.talos.dev (id "platformmetadata") ---
export const PlatformMetadataType = "PlatformMetadatas.talos.dev";
export const PlatformMetadataId = "platformmetadata";
/** Optional fields are omitted from YAML when empty (Go omitempty); build specs without them. */
export interface PlatformMetadataSpec {
  platform: string;
  hostname?: string;
  region?: string;
  zone?: string;
  instanceType?: string;
  instanceId?: string;
  providerId?: string;
  spot?: boolean;
}
export const platformMetadataDefinition = defineResource<PlatformMetadataSpec>({
  type: PlatformMetadataType,
  defaultNamespace: RUNTIME_NAMESPACE,
  printColumns: [
    { name: "Platform", jsonPath: "{.platform}" },
    { name: "Type", jsonPath: "{.instanceType}" },
    { name: "Region", jsonPath: "{.region}" },
    { name: "Zone", jsonPath: "{.zone}" },
  ],
  protoSpecType: "talos.resource.definitions.runtime.PlatformMetadataSpec",
  toProto: autoProto("talos.resource.definitions.runtime.PlatformMetadataSpec"),
});

// --- BlockDevices.block.talos.dev (id = kernel device name) ---
export const BlockDeviceType = "BlockDevices.block.talos.dev";
export interface BlockDeviceSpec {
  type: string;
  major: number;
  minor: number;
  partitionName?: string;
  partitionNumber?: number;
  generation: number;
  devicePath: string;
  parent?: string;
}
export const blockDeviceDefinition = defineResource<BlockDeviceSpec>({
  type: BlockDeviceType,
  defaultNamespace: RUNTIME_NAMESPACE,
  printColumns: [
    { name: "Type", jsonPath: "{.type}" },
    { name: "PartitionName", jsonPath: "{.partitionName}" },
    { name: "Generation", jsonPath: "{.generation}" },
  ],
  protoSpecType: "talos.resource.definitions.block.DeviceSpec",
  toProto: autoProto("talos.resource.definitions.block.DeviceSpec"),
});

// --- DiscoveredVolumes.block.talos.dev (id = kernel device name) ---
export const DiscoveredVolumeType = "DiscoveredVolumes.block.talos.dev";
export interface DiscoveredVolumeSpec {
  size: number;
  sectorSize: number;
  ioSize: number;
  name: string;
  uuid?: string;
  label?: string;
  blockSize?: number;
  filesystemBlockSize?: number;
  probedSize?: number;
  partitionUUID?: string;
  partitionType?: string;
  partitionLabel?: string;
  partitionIndex?: number;
  type: string;
  devicePath: string;
  parent?: string;
}
export const discoveredVolumeDefinition = defineResource<DiscoveredVolumeSpec>({
  type: DiscoveredVolumeType,
  defaultNamespace: RUNTIME_NAMESPACE,
  printColumns: [
    { name: "Type", jsonPath: "{.type}" },
    { name: "Size", jsonPath: "{.size}" },
    { name: "Discovered", jsonPath: "{.name}" },
    { name: "Label", jsonPath: "{.label}" },
    { name: "PartitionLabel", jsonPath: "{.partitionLabel}" },
  ],
  protoSpecType: "talos.resource.definitions.block.DiscoveredVolumeSpec",
  toProto: autoProto("talos.resource.definitions.block.DiscoveredVolumeSpec"),
});

// --- MountStatuses.runtime.talos.dev (id = partition label) ---
export const MountStatusType = "MountStatuses.runtime.talos.dev";
export interface MountStatusSpec {
  source: string;
  target: string;
  filesystemType: string;
  options?: string[];
  encrypted: boolean;
  encryptionProviders?: string[];
}
export const mountStatusDefinition = defineResource<MountStatusSpec>({
  type: MountStatusType,
  defaultNamespace: RUNTIME_NAMESPACE,
  aliases: ["mounts"],
  printColumns: [
    { name: "Source", jsonPath: "{.source}" },
    { name: "Target", jsonPath: "{.target}" },
    { name: "Filesystem Type", jsonPath: "{.filesystemType}" },
  ],
  protoSpecType: "talos.resource.definitions.runtime.MountStatusSpec",
  toProto: autoProto("talos.resource.definitions.runtime.MountStatusSpec"),
});

// --- TimeStatuses.v1alpha1.talos.dev (id "node") ---
export const TimeStatusType = "TimeStatuses.v1alpha1.talos.dev";
export interface TimeStatusSpec {
  synced: boolean;
  epoch: number;
  syncDisabled: boolean;
}
export const timeStatusDefinition = defineResource<TimeStatusSpec>({
  type: TimeStatusType,
  defaultNamespace: RUNTIME_NAMESPACE,
  printColumns: [{ name: "Synced", jsonPath: "{.synced}" }],
  protoSpecType: "talos.resource.definitions.time.StatusSpec",
  toProto: autoProto("talos.resource.definitions.time.StatusSpec"),
});

// --- AdjtimeStatuses.v1alpha1.talos.dev (id "node"): the kernel's clock discipline ---
export const AdjtimeStatusType = "AdjtimeStatuses.v1alpha1.talos.dev";
export interface AdjtimeStatusSpec {
  offsetNs: number;
  frequencyAdjustmentRatio: number;
  maxErrorNs: number;
  estErrorNs: number;
  status: string;
  constant: number;
  syncStatus: boolean;
  state: string;
}
const protoDuration = (ns: number) => ({ seconds: Math.trunc(ns / 1e9), nanos: ns % 1e9 });
export const adjtimeStatusDefinition = defineResource<AdjtimeStatusSpec>({
  type: AdjtimeStatusType,
  defaultNamespace: RUNTIME_NAMESPACE,
  printColumns: [
    { name: "Offset", jsonPath: "{.offset}" },
    { name: "EstError", jsonPath: "{.estError}" },
    { name: "MaxError", jsonPath: "{.maxError}" },
    { name: "Status", jsonPath: "{.status}" },
    { name: "Sync", jsonPath: "{.syncStatus}" },
  ],
  protoSpecType: "talos.resource.definitions.time.AdjtimeStatusSpec",
  toProto: (s) => ({
    offset: protoDuration(s.offsetNs),
    frequency_adjustment_ratio: s.frequencyAdjustmentRatio,
    max_error: protoDuration(s.maxErrorNs),
    est_error: protoDuration(s.estErrorNs),
    status: s.status,
    constant: s.constant,
    sync_status: s.syncStatus,
    state: s.state,
  }),
  // Talos's durations print as Go's time.Duration.String().
  toYaml: (s) =>
    marshalGoYaml({
      offset: goDuration(s.offsetNs / 1e6),
      frequencyAdjustmentRatio: s.frequencyAdjustmentRatio,
      maxError: goDuration(s.maxErrorNs / 1e6),
      estError: goDuration(s.estErrorNs / 1e6),
      status: s.status,
      constant: s.constant,
      syncStatus: s.syncStatus,
      state: s.state,
    }),
});

// --- KernelParamStatuses.runtime.talos.dev (id = the parameter's key, e.g. "proc.sys.net.ipv4.ip_forward", "sys.kernel.mm...") ---
export const KernelParamStatusType = "KernelParamStatuses.runtime.talos.dev";
export interface KernelParamStatusSpec {
  current: string;
  default: string;
  unsupported: boolean;
}
export const kernelParamStatusDefinition = defineResource<KernelParamStatusSpec>({
  type: KernelParamStatusType,
  defaultNamespace: RUNTIME_NAMESPACE,
  aliases: ["sysctls", "kernelparameters", "kernelparams"],
  printColumns: [
    { name: "Current", jsonPath: "{.current}" },
    { name: "Default", jsonPath: "{.default}" },
    { name: "Unsupported", jsonPath: "{.unsupported}" },
  ],
  protoSpecType: "talos.resource.definitions.runtime.KernelParamStatusSpec",
  toProto: autoProto("talos.resource.definitions.runtime.KernelParamStatusSpec"),
});

// --- ExtensionStatuses.runtime.talos.dev (id = layer index "0", "1", ...) ---
export const ExtensionStatusType = "ExtensionStatuses.runtime.talos.dev";
export interface ExtensionStatusSpec {
  image: string;
  metadata: {
    name: string;
    version: string;
    author: string;
    description: string;
    compatibility: { talos: { version: string } };
    extraInfo?: string;
  };
}
export const extensionStatusDefinition = defineResource<ExtensionStatusSpec>({
  type: ExtensionStatusType,
  defaultNamespace: RUNTIME_NAMESPACE,
  aliases: ["extensions"],
  printColumns: [
    { name: "Name", jsonPath: "{.metadata.name}" },
    { name: "Version", jsonPath: "{.metadata.version}" },
  ],
  protoSpecType: "talos.resource.definitions.extensions.Layer",
  toProto: autoProto("talos.resource.definitions.extensions.Layer"),
});

// --- DevicesStatuses.runtime.talos.dev (id "devices"): udevd has named and settled the devices ---
export const DevicesStatusType = "DevicesStatuses.runtime.talos.dev";
export const DevicesStatusId = "devices";
export interface DevicesStatusSpec {
  ready: boolean;
}
export const devicesStatusDefinition = defineResource<DevicesStatusSpec>({
  type: DevicesStatusType,
  defaultNamespace: RUNTIME_NAMESPACE,
  printColumns: [{ name: "Ready", jsonPath: "{.ready}" }],
  protoSpecType: "talos.resource.definitions.runtime.DevicesStatusSpec",
  toProto: (s) => ({ ready: s.ready }),
});

// --- MaintenanceServiceConfigs.runtime.talos.dev (id "maintenance") ---
export const MaintenanceServiceConfigType = "MaintenanceServiceConfigs.runtime.talos.dev";
export const MaintenanceServiceConfigId = "maintenance";
export interface MaintenanceServiceConfigSpec {
  listenAddress: string;
  reachableAddresses: string[];
}
export const maintenanceServiceConfigDefinition = defineResource<MaintenanceServiceConfigSpec>({
  type: MaintenanceServiceConfigType,
  defaultNamespace: RUNTIME_NAMESPACE,
  protoSpecType: "talos.resource.definitions.runtime.MaintenanceServiceConfigSpec",
  toProto: (s) => ({ listen_address: s.listenAddress, reachable_addresses: s.reachableAddresses.map(netIP) }),
});

export const runtimeDefinitions: readonly ResourceDefinition<never>[] = [
  extensionStatusDefinition,
  maintenanceServiceConfigDefinition,
  serviceDefinition,
  machineStatusDefinition,
  metaKeyDefinition,
  platformMetadataDefinition,
  blockDeviceDefinition,
  discoveredVolumeDefinition,
  mountStatusDefinition,
  timeStatusDefinition,
  adjtimeStatusDefinition,
  kernelParamStatusDefinition,
  devicesStatusDefinition,
];
