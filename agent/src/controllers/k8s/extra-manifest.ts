// k8s.ExtraManifestController: the extra manifests of a control plane's config (CNI
// urls, cloud provider manifests, extraManifests fetched over HTTP(S) with
// extraManifestHeaders, inlineManifests), each a Manifest `${priority}-${name}` as
// Talos names them. Downloads wait for the network to be ready, as Talos's do.

import { BasaltError, describeError } from "../../errors.js";
import {
  CONFIG_NAMESPACE,
  MachineConfigIds,
  MachineConfigType,
  MachineTypeId,
  MachineTypeType,
} from "../../resources/catalog/config.js";
import { CONTROLPLANE_NAMESPACE, ManifestType, type ManifestSpec } from "../../resources/catalog/k8s-manifests.js";
import {
  NETWORK_NAMESPACE,
  NetworkStatusId,
  NetworkStatusType,
  type NetworkStatusSpec,
} from "../../resources/catalog/network.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { controlPlaneConfig } from "./manifest.js";
import { extraManifests, type ExtraManifest } from "./manifest-input.js";
import { parseManifestYaml } from "./manifest-yaml.js";

/** Some extra manifests could not be downloaded or parsed; the others were published. */
export class ExtraManifestError extends BasaltError {}

/** Fetches a manifest's text (HTTP GET). */
export type ManifestFetcher = (url: string, headers: Record<string, string>, signal: AbortSignal) => Promise<string>;

export const httpFetchManifest: ManifestFetcher = async (url, headers, signal) => {
  const res = await fetch(url, { headers, signal });
  if (!res.ok) throw new ExtraManifestError(`bad response code: ${res.status}`, { url, status: res.status });
  return res.text();
};

export class ExtraManifestController implements Controller {
  readonly name = "k8s.ExtraManifestController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
    { namespace: CONFIG_NAMESPACE, type: MachineTypeType, id: MachineTypeId, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: NetworkStatusType, id: NetworkStatusId, kind: "weak" as const },
  ];
  readonly outputs = [{ type: ManifestType, kind: "shared" as const }];

  constructor(private readonly fetchManifest: ManifestFetcher = httpFetchManifest) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const net = ctx.get<NetworkStatusSpec>(NETWORK_NAMESPACE, NetworkStatusType, NetworkStatusId)?.spec;
    if (!net?.addressReady || !net.connectivityReady) return;
    const config = controlPlaneConfig(ctx)?.v1alpha1();
    const keep = new Set<string>();
    const failures: string[] = [];
    for (const m of config ? extraManifests(config) : []) {
      const id = `${m.priority}-${m.name}`;
      keep.add(id);
      try {
        const items = parseManifestYaml(await this.text(m, ctx.signal));
        ctx.modify<ManifestSpec>(CONTROLPLANE_NAMESPACE, ManifestType, id, () => ({ items }));
      } catch (err) {
        failures.push(`${id}: ${describeError(err)}`);
      }
    }
    // As Talos: nothing is removed while some manifest failed; the runtime retries.
    if (failures.length > 0)
      throw new ExtraManifestError(`error processing extra manifests: ${failures.join("; ")}`, { failures });
    ctx.destroyOthers(CONTROLPLANE_NAMESPACE, ManifestType, keep);
  }

  private async text(m: ExtraManifest, signal: AbortSignal): Promise<string> {
    if (m.inline !== undefined) return m.inline;
    try {
      return await this.fetchManifest(m.url ?? "", m.headers ?? {}, signal);
    } catch (err) {
      throw new ExtraManifestError(`error downloading ${JSON.stringify(m.url)}`, { url: m.url }, { cause: err });
    }
  }
}
