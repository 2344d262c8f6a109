// A stored resource as a `cosi.resource.Resource` plain object (snake_case fields
// for agent/src/api encode): metadata with the version as a decimal string (or
// "undefined" for tombstones), timestamps as seconds/nanos, and a spec carrying
// both `yaml_spec` and `proto_spec`. The spec sub-message is always present.

import { describeError } from "../errors.js";
import { encodeSpec, type ResourceDefinition, yamlSpec } from "./definitions.js";
import { type Resource, isTombstone } from "./resource.js";

export interface WireTimestamp {
  seconds: number;
  nanos: number;
}

export interface WireMetadata {
  namespace: string;
  type: string;
  id: string;
  version: string;
  owner: string;
  phase: string;
  created?: WireTimestamp;
  updated?: WireTimestamp;
  finalizers: string[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface WireResource {
  metadata: WireMetadata;
  spec: { proto_spec?: Buffer; yaml_spec?: string };
}

export function timestamp(d: Date): WireTimestamp {
  const ms = d.getTime();
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: (ms - seconds * 1000) * 1_000_000 };
}

export function wireMetadata(res: Resource<unknown>): WireMetadata {
  const m = res.metadata;
  const out: WireMetadata = {
    namespace: m.namespace,
    type: m.type,
    id: m.id,
    version: isTombstone(res) ? "undefined" : String(m.version),
    owner: m.owner,
    phase: m.phase,
    finalizers: [...m.finalizers],
    labels: { ...m.labels },
    annotations: { ...m.annotations },
  };
  if (!isTombstone(res)) {
    out.created = timestamp(m.created);
    out.updated = timestamp(m.updated);
  }
  return out;
}

/**
 * Encodes a resource; `def` is the definition of its type (undefined only for
 * tombstones, whose spec is empty).
 */
export function wireResource(res: Resource<unknown>, def: ResourceDefinition | undefined): WireResource {
  if (isTombstone(res) || res.spec === undefined) return { metadata: wireMetadata(res), spec: {} };
  // Both failures below are server bugs (a stored type without definition, a spec its
  // encoder rejects), so they surface as plain errors (gRPC Unknown), not caller errors.
  if (!def) throw new Error(`resource type ${res.metadata.type} has no definition`);
  try {
    return {
      metadata: wireMetadata(res),
      spec: { proto_spec: encodeSpec(def, res.spec), yaml_spec: yamlSpec(def, res.spec) },
    };
  } catch (err) {
    const m = res.metadata;
    throw new Error(`cannot encode ${m.namespace}/${m.type}/${m.id}: ${describeError(err)}`, { cause: err });
  }
}
