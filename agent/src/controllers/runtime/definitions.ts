import { defineResource } from "../../resources/definitions.js";

export const runtimeNamespace = "runtime";

export interface ServiceSpec {
  running: boolean;
  healthy: boolean;
  unknown: boolean;
}
export const ServicesType = "Services.v1alpha1.talos.dev";
export const serviceDefinition = defineResource<ServiceSpec>({
  type: ServicesType,
  defaultNamespace: runtimeNamespace,
  aliases: ["svc"],
  printColumns: [
    { name: "Running", jsonPath: "{.running}" },
    { name: "Healthy", jsonPath: "{.healthy}" },
    { name: "Health Unknown", jsonPath: "{.unknown}" },
  ],
  protoSpecType: "talos.resource.definitions.v1alpha1.ServiceSpec",
  toProto: (s) => ({ running: s.running, healthy: s.healthy, unknown: s.unknown }),
});

/** MachineStatus stages (YAML names) and their RuntimeMachineStage numbers. */
const stageNumber: Record<string, number> = {
  unknown: 0, booting: 1, installing: 2, maintenance: 3, running: 4, rebooting: 5, "shutting down": 6, resetting: 7, upgrading: 8,
};
export interface MachineStatusSpec {
  stage: string;
  status: { ready: boolean; unmetConditions: { name: string; reason: string }[] };
}
export const MachineStatusesType = "MachineStatuses.runtime.talos.dev";
export const machineStatusId = "machine";
export const machineStatusDefinition = defineResource<MachineStatusSpec>({
  type: MachineStatusesType,
  defaultNamespace: runtimeNamespace,
  printColumns: [
    { name: "Stage", jsonPath: "{.stage}" },
    { name: "Ready", jsonPath: "{.status.ready}" },
  ],
  protoSpecType: "talos.resource.definitions.runtime.MachineStatusSpec",
  toProto: (s) => ({
    stage: stageNumber[s.stage] ?? 0,
    status: { ready: s.status.ready, unmet_conditions: s.status.unmetConditions.map((c) => ({ name: c.name, reason: c.reason })) },
  }),
});

export const runtimeDefinitions = [serviceDefinition, machineStatusDefinition];
