import { defineResource } from "../../resources/definitions.js";

export const configNamespace = "config";

/** The whole multi-document configuration text, as Talos stores it. */
export interface MachineConfigSpec {
  yaml: string;
}
export const MachineConfigsType = "MachineConfigs.config.talos.dev";
/** Ids: `v1alpha1` (the active config), `maintenance` (received in maintenance mode). */
export const activeConfigId = "v1alpha1";
export const machineConfigDefinition = defineResource<MachineConfigSpec>({
  type: MachineConfigsType,
  defaultNamespace: configNamespace,
  aliases: ["mc"],
  sensitive: true,
  protoSpecType: "resource.config.MachineConfigSpec",
  toProto: (s) => ({ yaml_marshalled: Buffer.from(s.yaml) }),
  toYaml: (s) => s.yaml,
});

export type MachineTypeName = "init" | "controlplane" | "worker" | "unknown";
export const MachineTypesType = "MachineTypes.config.talos.dev";
export const machineTypeId = "machine-type";
const machineTypeNumber: Record<MachineTypeName, number> = { unknown: 0, init: 1, controlplane: 2, worker: 3 };
export const machineTypeDefinition = defineResource<MachineTypeName>({
  type: MachineTypesType,
  defaultNamespace: configNamespace,
  printColumns: [{ name: "Type", jsonPath: "{@}" }],
  protoSpecType: "resource.config.MachineTypeSpec",
  toProto: (s) => ({ machine_type: machineTypeNumber[s] ?? 0 }),
  toYaml: (s) => `${s}\n`,
});

export const configDefinitions = [machineConfigDefinition, machineTypeDefinition];
