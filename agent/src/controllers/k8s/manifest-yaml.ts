// Manifest text (one or more YAML documents) as Kubernetes objects, as Talos's
// Manifest adapter reads it: empty and comment-only documents are skipped and a
// List is unwrapped into its items.

import { parseAllDocuments } from "yaml";
import { InvalidInputError } from "../../errors.js";
import type { KubernetesObject } from "../../resources/catalog/k8s-manifests.js";

export function parseManifestYaml(text: string): KubernetesObject[] {
  const out: KubernetesObject[] = [];
  // Kubernetes reads manifests with YAML 1.1 scalars (sigs.k8s.io/yaml).
  for (const doc of parseAllDocuments(text, { version: "1.1" })) {
    if (doc.errors.length > 0)
      throw new InvalidInputError(`error parsing manifest: ${doc.errors[0]!.message}`, {}, { cause: doc.errors[0] });
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    if (typeof value !== "object" || Array.isArray(value))
      throw new InvalidInputError("error parsing manifest: a document is not an object");
    const obj = value as KubernetesObject;
    if (Object.keys(obj).length === 0) continue;
    if (Array.isArray(obj.items)) out.push(...(obj.items as KubernetesObject[]));
    else out.push(obj);
  }
  return out;
}
