// Namespace `controlplane`: the bootstrap manifests a control plane renders
// (Manifests.kubernetes.talos.dev, one per manifest id, each a list of Kubernetes
// objects) and what was applied to the API server (ManifestStatuses, id `manifests`).

import { defineResource, type ResourceDefinition } from "../definitions.js";
import { marshalGoYaml } from "../go-yaml.js";
import { CONTROLPLANE_NAMESPACE, protoStruct } from "./k8s-secrets.js";

export { CONTROLPLANE_NAMESPACE } from "./k8s-secrets.js";

/** One Kubernetes object as parsed from YAML (apiVersion, kind, metadata, ...). */
export type KubernetesObject = Record<string, unknown>;

export const ManifestType = "Manifests.kubernetes.talos.dev";
export interface ManifestSpec {
  items: KubernetesObject[];
}

export const ManifestStatusType = "ManifestStatuses.kubernetes.talos.dev";
export const ManifestStatusId = "manifests";
export interface ManifestStatusSpec {
  manifestsApplied: string[];
}

export const manifestDefinition = defineResource<ManifestSpec>({
  type: ManifestType,
  defaultNamespace: CONTROLPLANE_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.ManifestSpec",
  toProto: (s) => ({ items: s.items.map((o) => ({ object: protoStruct(o) })) }),
  // Talos marshals the spec as its list of objects, each inline.
  toYaml: (s) => marshalGoYaml(s.items),
});

export const manifestStatusDefinition = defineResource<ManifestStatusSpec>({
  type: ManifestStatusType,
  defaultNamespace: CONTROLPLANE_NAMESPACE,
  protoSpecType: "talos.resource.definitions.k8s.ManifestStatusSpec",
  toProto: (s) => ({ manifests_applied: s.manifestsApplied }),
});

export const k8sManifestDefinitions: readonly ResourceDefinition<never>[] = [
  manifestDefinition,
  manifestStatusDefinition,
];
