// `gen config`: secrets (given or new) -> controlplane.yaml, worker.yaml, talosconfig.
import { checkClusterOptions, machineConfigYaml, type ClusterOptions } from "./machine-config.js";
import { generateSecretsBundle, type SecretsBundle } from "./secrets.js";
import { generateTalosconfig } from "./talosconfig.js";

export interface GenerateConfigsOptions extends ClusterOptions {
  /** Reuse this bundle (`--with-secrets`); otherwise a new one is generated. */
  secrets?: SecretsBundle;
  /** talosconfig endpoints/nodes (default none). */
  talosconfigEndpoints?: string[];
  talosconfigNodes?: string[];
  /** Client certificate roles (default os:admin). */
  roles?: string[];
  /** Generation time (CA NotBefore for new bundles, client certificate NotBefore). */
  now?: Date;
}

export interface GeneratedConfigs {
  controlplane: string;
  worker: string;
  talosconfig: string;
  /** The bundle used (new or given), e.g. to save it for later runs. */
  secrets: SecretsBundle;
}

export async function generateConfigs(options: GenerateConfigsOptions): Promise<GeneratedConfigs> {
  // Validate the inputs before spending time on key generation (RSA 4096 takes a second or two).
  checkClusterOptions(options);
  const secrets = options.secrets ?? (await generateSecretsBundle(options.now));
  const talosconfig = await generateTalosconfig(secrets, {
    contextName: options.clusterName,
    endpoints: options.talosconfigEndpoints ?? [],
    nodes: options.talosconfigNodes ?? [],
    ...(options.roles ? { roles: options.roles } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
  return {
    controlplane: machineConfigYaml("controlplane", options, secrets),
    worker: machineConfigYaml("worker", options, secrets),
    talosconfig,
    secrets,
  };
}
