// Namespace `config`: the machine configuration and the machine type.

import { defineResource, type ResourceDefinition } from "../definitions.js";
import { marshalGoYaml } from "../go-yaml.js";

export const CONFIG_NAMESPACE = "config";

export const MachineConfigType = "MachineConfigs.config.talos.dev";
/** Ids Talos uses: the active config and the one received in maintenance mode. */
export const MachineConfigIds = { active: "v1alpha1", maintenance: "maintenance" } as const;
/**
 * The parsed configuration (the config module's ConfigBundle, which this layer cannot
 * import): served as the multi-document text it was applied as.
 */
export interface MachineConfigSpec {
  toYaml(): string;
}

export const MachineTypeType = "MachineTypes.config.talos.dev";
export const MachineTypeId = "machine-type";
export type MachineTypeName = "unknown" | "init" | "controlplane" | "worker";
export type MachineTypeSpec = MachineTypeName;

const machineTypeNumbers: Record<MachineTypeName, number> = { unknown: 0, init: 1, controlplane: 2, worker: 3 };

export const machineConfigDefinition = defineResource<MachineConfigSpec>({
  type: MachineConfigType,
  defaultNamespace: CONFIG_NAMESPACE,
  sensitive: true,
  protoSpecType: "resource.config.MachineConfigSpec",
  toProto: (cfg) => ({ yaml_marshalled: Buffer.from(cfg.toYaml(), "utf8") }),
  // Talos serves the config bytes themselves as the YAML spec.
  toYaml: (cfg) => cfg.toYaml(),
});

export const machineTypeDefinition = defineResource<MachineTypeSpec>({
  type: MachineTypeType,
  defaultNamespace: CONFIG_NAMESPACE,
  printColumns: [{ name: "Type", jsonPath: "{@}" }],
  protoSpecType: "resource.config.MachineTypeSpec",
  toProto: (t) => ({ machine_type: machineTypeNumbers[t] ?? 0 }),
  toYaml: (t) => marshalGoYaml(t),
});

export const configDefinitions: readonly ResourceDefinition<never>[] = [machineConfigDefinition, machineTypeDefinition];
