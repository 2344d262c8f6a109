// Namespace `cri`: SeccompProfiles.cri.talos.dev, one per `.machine.seccompProfiles` entry
// (id = the profile's name), which the kubelet finds as files in its seccomp profiles directory.

import { defineResource, type ResourceDefinition } from "../definitions.js";
import { marshalGoYaml } from "../go-yaml.js";
import { sortKeysDeep } from "../go-json.js";
import { protoStruct } from "./k8s-secrets.js";

export const CRI_NAMESPACE = "cri";

export const SeccompProfileType = "SeccompProfiles.cri.talos.dev";
export interface SeccompProfileSpec {
  name: string;
  value: Record<string, unknown>;
}

export const seccompProfileDefinition = defineResource<SeccompProfileSpec>({
  type: SeccompProfileType,
  defaultNamespace: CRI_NAMESPACE,
  // Talos defines no aliases and no print columns for it.
  protoSpecType: "talos.resource.definitions.cri.SeccompProfileSpec",
  toProto: (s) => ({ name: s.name, value: protoStruct(s.value) }),
  // The value is a Go map: yaml.v3 writes its keys sorted.
  toYaml: (s) => marshalGoYaml({ name: s.name, value: sortKeysDeep(s.value) }),
});

export const criDefinitions: readonly ResourceDefinition<never>[] = [seccompProfileDefinition];
