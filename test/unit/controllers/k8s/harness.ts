// A store with the inputs the kubelet's controllers read, written as their producers would.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { TestContext } from "node:test";
import { generateConfigs, type GeneratedConfigs } from "../../../../agent/src/config/generate/index.js";
import { loadConfig } from "../../../../agent/src/config/load.js";
import { applyPatches } from "../../../../agent/src/config/patch/apply.js";
import {
  CONFIG_NAMESPACE,
  MachineConfigIds,
  MachineConfigType,
} from "../../../../agent/src/resources/catalog/config.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  K8S_NAMESPACE,
  StaticPodServerStatusId,
  StaticPodServerStatusType,
} from "../../../../agent/src/resources/catalog/k8s-kubelet.js";
import {
  HostnameStatusId,
  HostnameStatusType,
  NETWORK_NAMESPACE,
  networkDefinitions,
  NodeAddressType,
} from "../../../../agent/src/resources/catalog/network.js";
import type { Controller } from "../../../../agent/src/resources/controller-runtime.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { routedNoK8sId } from "../../../../agent/src/controllers/k8s/nodeip.js";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../..");
export const fixtureText = (name: string) =>
  readFileSync(path.join(repoRoot, "test/fixtures/k8s/kubelet", name), "utf8");
export const fixtureJson = <T>(name: string): T => JSON.parse(fixtureText(name)) as T;

let generated: GeneratedConfigs | undefined;
/** `talosctl gen config`-shaped configs (endpoint https://10.9.0.1:6443). */
export async function genConfigs(): Promise<GeneratedConfigs> {
  generated ??= await generateConfigs({ clusterName: "unit", endpoint: "https://10.9.0.1:6443", installDisk: "" });
  return generated;
}

export const withPatch = (configYaml: string, patch: string) => applyPatches(configYaml, [patch]);

export interface NodeFacts {
  hostname: string;
  domainname: string;
  routed: string[];
  staticPodURL?: string;
}

/** The store, with `config` active and the node's facts published; `controllers` running until the test ends. */
export function node(t: TestContext, configYaml: string | undefined, facts: NodeFacts, controllers: Controller[]) {
  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const setConfig = (yaml: string) =>
    state.modify(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, "test.ConfigLoader", () =>
      loadConfig(yaml),
    );
  if (configYaml !== undefined) setConfig(configYaml);
  state.modify(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId, "test.Network", () => ({
    hostname: facts.hostname,
    domainname: facts.domainname,
  }));
  const setRouted = (addresses: string[]) =>
    state.modify(NETWORK_NAMESPACE, NodeAddressType, routedNoK8sId, "test.Network", () => ({ addresses }));
  setRouted(facts.routed);
  if (facts.staticPodURL) {
    state.modify(K8S_NAMESPACE, StaticPodServerStatusType, StaticPodServerStatusId, "test.StaticPodServer", () => ({
      url: facts.staticPodURL,
    }));
  }
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 10, maxBackoffMs: 50 });
  for (const c of controllers) runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  return { state, runtime, setConfig, setRouted };
}
