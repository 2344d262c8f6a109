// Registers the whole catalog (namespaces and definitions) into a store. Other
// owners' definitions (e.g. networking's catalog/network.ts) are passed in as
// `extra` so this module does not depend on files it does not own.

import {
  defineResource,
  registerDefinitions,
  registerNamespaces,
  type ResourceDefinition,
  type ResourceDefinitionInput,
} from "../definitions.js";
import type { ResourceState } from "../state.js";
import { clusterDefinitions } from "./cluster.js";
import { configDefinitions } from "./config.js";
import { criDefinitions } from "./cri.js";
import { etcdDefinitions } from "./etcd.js";
import { hardwareDefinitions } from "./hardware.js";
import { kernelParamDefinitions } from "./kernel-params.js";
import { kernelModuleDefinitions } from "./kernel-modules.js";
import { k8sManifestDefinitions } from "./k8s-manifests.js";
import { hostDnsDefinitions } from "./hostdns.js";
import { controlPlaneDefinitions } from "./k8s-controlplane.js";
import { kubeletDefinitions } from "./k8s-kubelet.js";
import { nodeDefinitions } from "./k8s-nodes.js";
import { namespaces } from "./meta.js";
import { runtimeDefinitions } from "./runtime.js";
import { secretsDefinitions } from "./secrets.js";
import { securityDefinitions } from "./security.js";
import { kubernetesSecretsDefinitions } from "./k8s-secrets.js";

export const catalogDefinitions: readonly ResourceDefinition<never>[] = [
  ...configDefinitions,
  ...runtimeDefinitions,
  ...securityDefinitions,
  ...secretsDefinitions,
  ...clusterDefinitions,
  ...hardwareDefinitions,
  ...kernelParamDefinitions,
  ...kernelModuleDefinitions,
  ...hostDnsDefinitions,
  ...etcdDefinitions,
  ...kubernetesSecretsDefinitions,
  ...k8sManifestDefinitions,
  ...controlPlaneDefinitions,
  ...kubeletDefinitions,
  ...nodeDefinitions,
  ...criDefinitions,
];

/**
 * Registers every namespace and every definition of the catalog, plus `extra`
 * (inputs or already defined definitions), into `state`.
 */
export function registerCatalog(
  state: ResourceState,
  extra: readonly (ResourceDefinitionInput<never> | ResourceDefinition<never>)[] = [],
): void {
  registerNamespaces(state, namespaces);
  registerDefinitions(state, catalogDefinitions);
  registerDefinitions(
    state,
    extra.map((d) => ("spec" in d && "id" in d ? (d as ResourceDefinition<never>) : defineResource(d))),
  );
}

export { namespaces } from "./meta.js";
