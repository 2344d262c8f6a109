// Resource definitions and namespaces: what each type is called (display type,
// aliases as cosi computes them), where it lives, whether it is sensitive, and how
// its spec is encoded for the wire (protobuf spec message and YAML). Definitions
// and namespaces are themselves stored as resources in namespace `meta`, which is
// what clients list to resolve `talosctl get <word>`.

import { encode } from "../api/index.js";
import { InvalidInputError } from "../errors.js";
import { marshalGoYaml } from "./go-yaml.js";
import type { ResourceState } from "./state.js";

export const META_NAMESPACE = "meta";
export const RESOURCE_DEFINITION_TYPE = "ResourceDefinitions.meta.cosi.dev";
export const NAMESPACE_TYPE = "Namespaces.meta.cosi.dev";

export interface PrintColumn {
  name: string;
  jsonPath: string;
}

/** What a catalog module declares for one resource type. */
export interface ResourceDefinitionInput<S = unknown> {
  /** Full type string, CamelCase plural name plus suffix, e.g. `AddressStatuses.net.talos.dev`. */
  type: string;
  /** Namespace clients use when none is given. */
  defaultNamespace: string;
  /** Aliases declared explicitly (before the computed ones). */
  aliases?: string[];
  /** Overrides the computed singular (for irregular plurals). */
  displayType?: string;
  printColumns?: PrintColumn[];
  sensitive?: boolean;
  /** Full name of the protobuf spec message, e.g. `talos.resource.definitions.network.AddressStatusSpec`. */
  protoSpecType: string;
  /** The spec as a plain object for `encode(protoSpecType, ...)` (snake_case proto field names). */
  toProto(spec: S): object;
  /** The `yaml_spec` text; default: the spec marshalled as Go's yaml.v3 would. */
  toYaml?(spec: S): string;
}

/** Spec of a `ResourceDefinitions.meta.cosi.dev` resource, as its YAML shows it. */
export interface ResourceDefinitionSpec {
  type: string;
  displayType: string;
  defaultNamespace: string;
  aliases: string[];
  allAliases: string[];
  printColumns: PrintColumn[];
  /** Omitted when not sensitive (Go omitempty). */
  sensitivity?: "sensitive";
}

/** Spec of a `Namespaces.meta.cosi.dev` resource. */
export interface NamespaceSpec {
  description: string;
}

/** A registered definition: the input plus the computed fields. */
export interface ResourceDefinition<S = unknown> extends ResourceDefinitionInput<S> {
  /** Lower-cased type: the id of its ResourceDefinition resource. */
  id: string;
  spec: ResourceDefinitionSpec;
  sensitive: boolean;
}

const NAME_RE = /^[A-Z][A-Za-z0-9-]+$/;
const SUFFIX_RE = /^[a-z][a-z0-9-]+(\.[a-z][a-z0-9-]+)*$/;

/** English singular of a CamelCase plural, enough for the Talos type names. */
export function singular(plural: string): string {
  const rules: [RegExp, string][] = [
    [/(ss|x|sh|zz|tch)es$/, "$1"], // Addresses, Patches (not Caches)
    [/uses$/, "us"], // Statuses
    [/ies$/, "y"], // Entries, Identities
    [/([^s])s$/, "$1"], // Services, Links, Metadatas
  ];
  for (const [re, rep] of rules) if (re.test(plural)) return plural.replace(re, rep);
  return plural;
}

/** Computes display type, aliases and all aliases the way cosi does (cosi-state.md §7). */
export function computeDefinitionSpec(input: ResourceDefinitionInput<never>): ResourceDefinitionSpec {
  const dot = input.type.indexOf(".");
  if (dot <= 0 || dot === input.type.length - 1)
    throw new InvalidInputError(`resource type ${input.type}: missing name or suffix`);
  const name = input.type.slice(0, dot);
  const suffix = input.type.slice(dot + 1);
  if (!NAME_RE.test(name) || name.toLowerCase() === name)
    throw new InvalidInputError(`resource type ${input.type}: name should be CamelCase`);
  if (!SUFFIX_RE.test(suffix)) throw new InvalidInputError(`resource type ${input.type}: bad suffix`);

  const displayType = input.displayType ?? singular(name);
  const aliases = [...(input.aliases ?? []), displayType.toLowerCase()];
  const capitals = name.replace(/[^A-Z]/g, "");
  if (capitals.length > 1) {
    aliases.push(capitals.toLowerCase());
    if (!capitals.endsWith("S")) aliases.push(capitals.toLowerCase() + "s");
  }
  const allAliases = [name.toLowerCase()];
  const parts = suffix.split(".");
  for (let i = 1; i < parts.length; i++) allAliases.push([name.toLowerCase(), ...parts.slice(0, i)].join("."));
  allAliases.push(...aliases);

  const spec: ResourceDefinitionSpec = {
    type: input.type,
    displayType,
    defaultNamespace: input.defaultNamespace,
    aliases,
    allAliases,
    printColumns: (input.printColumns ?? []).map((c) => ({ name: c.name, jsonPath: c.jsonPath })),
  };
  if (input.sensitive) spec.sensitivity = "sensitive";
  return spec;
}

/** Validates a definition and computes its derived fields. */
export function defineResource<S>(input: ResourceDefinitionInput<S>): ResourceDefinition<S> {
  return {
    ...input,
    id: input.type.toLowerCase(),
    sensitive: input.sensitive ?? false,
    spec: computeDefinitionSpec(input as ResourceDefinitionInput<never>),
  };
}

/** The `proto_spec` bytes of a spec. */
export function encodeSpec<S>(def: ResourceDefinition<S>, spec: S): Buffer {
  return encode(def.protoSpecType, def.toProto(spec));
}

/** The `yaml_spec` text of a spec. */
export function yamlSpec<S>(def: ResourceDefinition<S>, spec: S): string {
  return def.toYaml ? def.toYaml(spec) : marshalGoYaml(spec);
}

// The two built-in kinds. Their own definitions are resources too.

export const resourceDefinitionDefinition = defineResource<ResourceDefinitionSpec>({
  type: RESOURCE_DEFINITION_TYPE,
  defaultNamespace: META_NAMESPACE,
  aliases: ["api-resources"],
  printColumns: [{ name: "Aliases", jsonPath: "{.aliases[:]}" }],
  protoSpecType: "cosi.resource.meta.ResourceDefinitionSpec",
  toProto: (s) => ({
    resource_type: s.type,
    display_type: s.displayType,
    default_namespace: s.defaultNamespace,
    aliases: s.aliases,
    all_aliases: s.allAliases,
    print_columns: s.printColumns.map((c) => ({ name: c.name, json_path: c.jsonPath })),
    sensitivity: s.sensitivity === "sensitive" ? 1 : 0,
  }),
});

export const namespaceDefinition = defineResource<NamespaceSpec>({
  type: NAMESPACE_TYPE,
  defaultNamespace: META_NAMESPACE,
  aliases: ["ns"],
  protoSpecType: "cosi.resource.meta.NamespaceSpec",
  toProto: (s) => ({ description: s.description }),
});

// Which definitions a store serves. Kept beside the store (not inside its resources)
// because definitions carry functions; keyed weakly so a dropped store frees them.
const registries = new WeakMap<ResourceState, Map<string, ResourceDefinition>>();

function registryOf(state: ResourceState): Map<string, ResourceDefinition> {
  let m = registries.get(state);
  if (!m) {
    m = new Map();
    registries.set(state, m);
    for (const def of [resourceDefinitionDefinition, namespaceDefinition]) {
      m.set(def.type, def as ResourceDefinition);
      putDefinitionResource(state, def as ResourceDefinition);
    }
  }
  return m;
}

function putDefinitionResource(state: ResourceState, def: ResourceDefinition): void {
  state.modify<ResourceDefinitionSpec>(META_NAMESPACE, RESOURCE_DEFINITION_TYPE, def.id, "", () => def.spec);
}

/**
 * Registers definitions (ResourceDefinition resources in `meta`, owner "") and makes
 * their encoders available through lookupDefinition. Registering a type again replaces it.
 */
export function registerDefinitions(state: ResourceState, defs: readonly ResourceDefinition<never>[]): void {
  const reg = registryOf(state);
  for (const def of defs) {
    reg.set(def.type, def as unknown as ResourceDefinition);
    putDefinitionResource(state, def as unknown as ResourceDefinition);
  }
}

/** Registers namespaces as `Namespaces.meta.cosi.dev` resources (always including `meta`). */
export function registerNamespaces(
  state: ResourceState,
  namespaces: readonly { name: string; description: string }[],
): void {
  registryOf(state);
  for (const ns of namespaces) {
    state.modify<NamespaceSpec>(META_NAMESPACE, NAMESPACE_TYPE, ns.name, "", () => ({ description: ns.description }));
  }
}

/** The definition of a type registered in this store (exact type string), if any. */
export function lookupDefinition(state: ResourceState, type: string): ResourceDefinition | undefined {
  return registryOf(state).get(type);
}

/** Every definition registered in this store. */
export function allDefinitions(state: ResourceState): ResourceDefinition[] {
  return [...registryOf(state).values()];
}
