// Namespace `runtime`: the kernel modules to load, from `.machine.kernel.modules`; id = the module's name.

import { marshalGoYaml } from "../go-yaml.js";
import { defineResource, type ResourceDefinition } from "../definitions.js";
import { RUNTIME_NAMESPACE } from "./runtime.js";

export interface KernelModuleSpecSpec {
  name: string;
  parameters: string[];
}

export const KernelModuleSpecType = "KernelModuleSpecs.runtime.talos.dev";
export const kernelModuleSpecDefinition = defineResource<KernelModuleSpecSpec>({
  type: KernelModuleSpecType,
  defaultNamespace: RUNTIME_NAMESPACE,
  aliases: ["modules"],
  protoSpecType: "talos.resource.definitions.runtime.KernelModuleSpecSpec",
  toProto: (s) => ({ name: s.name, parameters: s.parameters }),
  // Talos's struct tags the name `yaml:"string"`, so `get modules -o yaml` shows it under that key.
  toYaml: (s) => marshalGoYaml({ string: s.name, parameters: s.parameters }),
});

export const kernelModuleDefinitions: readonly ResourceDefinition<never>[] = [kernelModuleSpecDefinition];
