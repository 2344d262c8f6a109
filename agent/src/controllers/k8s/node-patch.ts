// What the node's wanted labels and taints make of its Kubernetes Node object, as Talos's
// NodeApplyController computes it: a wanted label or taint the Node lacks is added and
// owned; one already there with the wanted value becomes owned; one there with another
// value is updated only when owned (someone else's is left alone); an owned one no longer
// wanted is removed. Ownership is kept on the Node itself, in the annotations
// `talos.dev/owned-labels` and `talos.dev/owned-taints` (sorted JSON arrays of keys,
// removed when empty), so a label or taint someone else set is never removed. A cordon
// (unschedulable) is marked `talos.dev/cordoned` and only such a cordon is lifted.

import { BasaltError } from "../../errors.js";
import type { NodeTaintSpecSpec } from "../../resources/catalog/k8s-nodes.js";

export const OWNED_LABELS_ANNOTATION = "talos.dev/owned-labels";
export const OWNED_TAINTS_ANNOTATION = "talos.dev/owned-taints";
/** Set with `"true"` when the node cordoned itself: only such a cordon is lifted again. */
export const CORDONED_ANNOTATION = "talos.dev/cordoned";

export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

/** The parts of a core/v1 Node this reads and writes; the rest is carried through untouched. */
export interface KubeNode {
  metadata: {
    name: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [field: string]: unknown;
  };
  spec?: { taints?: Taint[]; unschedulable?: boolean; [field: string]: unknown };
  [field: string]: unknown;
}

/** An ownership annotation on the Node is not a JSON array of strings. */
export class OwnedAnnotationError extends BasaltError {}

function readOwned(node: KubeNode, annotation: string): Set<string> {
  const text = node.metadata.annotations?.[annotation] ?? "";
  if (text === "") return new Set();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new OwnedAnnotationError(`error unmarshaling ${annotation}: ${text}`, { annotation }, { cause: err });
  }
  if (!Array.isArray(parsed) || !parsed.every((k) => typeof k === "string"))
    throw new OwnedAnnotationError(`error unmarshaling ${annotation}: not a list of strings: ${text}`, { annotation });
  return new Set(parsed);
}

function writeOwned(annotations: Record<string, string>, annotation: string, owned: Set<string>): void {
  if (owned.size === 0) delete annotations[annotation];
  else annotations[annotation] = JSON.stringify([...owned].sort());
}

function applyLabels(labels: Record<string, string>, owned: Set<string>, wanted: ReadonlyMap<string, string>): void {
  for (const [key, value] of wanted) {
    if (!(key in labels) || labels[key] === value) {
      labels[key] = value;
      owned.add(key);
    } else if (owned.has(key)) {
      labels[key] = value;
    }
  }
  for (const key of [...owned]) {
    if (!wanted.has(key)) {
      delete labels[key];
      owned.delete(key);
    }
  }
}

function applyTaints(taints: Taint[], owned: Set<string>, wanted: readonly NodeTaintSpecSpec[]): Taint[] {
  for (const want of wanted) {
    const current = taints.findLast((t) => t.key === want.key);
    if (!current) {
      taints.push({ key: want.key, ...(want.value ? { value: want.value } : {}), effect: want.effect });
      owned.add(want.key);
    } else if (owned.has(want.key)) {
      if (want.value) current.value = want.value;
      else delete current.value;
      current.effect = want.effect;
    } else if ((current.value ?? "") === want.value && current.effect === want.effect) {
      owned.add(want.key);
    }
  }
  // As Talos: only a key found on the Node is disowned, so an owned key someone else already removed stays listed.
  return taints.filter((t) => {
    if (!owned.has(t.key) || wanted.some((w) => w.key === t.key)) return true;
    owned.delete(t.key);
    return false;
  });
}

/** Cordons (unschedulable, annotated); uncordons only a Node this annotation says the node cordoned. */
function applyCordoned(spec: NonNullable<KubeNode["spec"]>, annotations: Record<string, string>, cordon: boolean) {
  if (cordon && spec.unschedulable !== true) {
    spec.unschedulable = true;
    annotations[CORDONED_ANNOTATION] = "true";
  } else if (!cordon && spec.unschedulable === true && CORDONED_ANNOTATION in annotations) {
    delete spec.unschedulable;
    delete annotations[CORDONED_ANNOTATION];
  }
}

/** The Node with the wanted labels, taints and cordon applied (a new object) and whether anything changed. */
export function patchNode(
  node: KubeNode,
  wantedLabels: ReadonlyMap<string, string>,
  wantedTaints: readonly NodeTaintSpecSpec[],
  cordon = false,
): { node: KubeNode; changed: boolean } {
  const next = structuredClone(node);
  const labels = (next.metadata.labels ??= {});
  const annotations = (next.metadata.annotations ??= {});
  const spec = (next.spec ??= {});
  const ownedLabels = readOwned(node, OWNED_LABELS_ANNOTATION);
  const ownedTaints = readOwned(node, OWNED_TAINTS_ANNOTATION);
  applyLabels(labels, ownedLabels, wantedLabels);
  const taints = applyTaints(spec.taints ?? [], ownedTaints, wantedTaints);
  if (taints.length > 0) spec.taints = taints;
  else delete spec.taints;
  applyCordoned(spec, annotations, cordon);
  writeOwned(annotations, OWNED_LABELS_ANNOTATION, ownedLabels);
  writeOwned(annotations, OWNED_TAINTS_ANNOTATION, ownedTaints);
  return { node: next, changed: JSON.stringify(next) !== JSON.stringify(normalized(node)) };
}

/** The Node as patchNode lays it out before any change, so an unchanged Node compares equal. */
function normalized(node: KubeNode): KubeNode {
  const copy = structuredClone(node);
  copy.metadata.labels ??= {};
  copy.metadata.annotations ??= {};
  copy.spec ??= {};
  if (copy.spec.taints?.length === 0) delete copy.spec.taints;
  return copy;
}
