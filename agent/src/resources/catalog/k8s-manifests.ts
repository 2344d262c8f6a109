// Namespace `controlplane`: the bootstrap manifests a control plane renders
// (Manifests.kubernetes.talos.dev, one per manifest id, each a list of Kubernetes
// objects) and what was applied to the API server (ManifestStatuses, id `manifests`).

import { defineResource, type ResourceDefinition } from "../definitions.js";
import { marshalGoYaml } from "../go-yaml.js";

export const CONTROLPLANE_NAMESPACE = "controlplane";

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

/** A JSON value as google.protobuf.Value (protobufjs's built-in Struct uses camelCase names). */
function protoValue(v: unknown): object {
  if (v === null || v === undefined) return { nullValue: 0 };
  if (typeof v === "number") return { numberValue: v };
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "boolean") return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(protoValue) } };
  return { structValue: protoStruct(v as Record<string, unknown>) };
}

/** A JSON object as google.protobuf.Struct. */
export function protoStruct(obj: Record<string, unknown>): object {
  return { fields: Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, protoValue(v)])) };
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

export const k8sManifestDefinitions: readonly ResourceDefinition<never>[] = [manifestDefinition, manifestStatusDefinition];
