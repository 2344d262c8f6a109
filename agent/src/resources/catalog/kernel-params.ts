// Namespace `runtime`: the kernel parameters to apply, from the machine config
// (KernelParamSpecs) and Talos's defaults (KernelParamDefaultSpecs); id = the key,
// "proc.sys.<sysctl>" or "sys.<sysfs path>". Their status is KernelParamStatuses (runtime.ts).

import { defineResource, type ResourceDefinition } from "../definitions.js";
import { RUNTIME_NAMESPACE } from "./runtime.js";

export interface KernelParamSpecSpec {
  value: string;
  ignoreErrors: boolean;
}

const toProto = (s: KernelParamSpecSpec) => ({ value: s.value, ignore_errors: s.ignoreErrors });

export const KernelParamSpecType = "KernelParamSpecs.runtime.talos.dev";
export const kernelParamSpecDefinition = defineResource<KernelParamSpecSpec>({
  type: KernelParamSpecType,
  defaultNamespace: RUNTIME_NAMESPACE,
  protoSpecType: "talos.resource.definitions.runtime.KernelParamSpecSpec",
  toProto,
});

export const KernelParamDefaultSpecType = "KernelParamDefaultSpecs.runtime.talos.dev";
export const kernelParamDefaultSpecDefinition = defineResource<KernelParamSpecSpec>({
  type: KernelParamDefaultSpecType,
  defaultNamespace: RUNTIME_NAMESPACE,
  protoSpecType: "talos.resource.definitions.runtime.KernelParamSpecSpec",
  toProto,
});

export const kernelParamDefinitions: readonly ResourceDefinition<never>[] = [
  kernelParamSpecDefinition,
  kernelParamDefaultSpecDefinition,
];
