// MachineService.GenerateClientConfiguration (talosctl config new): a client certificate
// for the requested roles and lifetime, signed by the OS CA of the active configuration,
// and a talosconfig holding it. The role table admits os:admin only (grpc/roles.ts);
// maintenance mode refuses the method before it gets here (machined/access.ts).

import type { ConfigBundle } from "../../config/bundle.js";
import { ConflictError, InvalidInputError } from "../../errors.js";

export interface GenerateClientConfigurationRequest {
  roles?: string[];
  crt_ttl?: { seconds?: number; nanos?: number };
}

export interface ClientConfigContext {
  /** The active machine configuration, or undefined before one is applied. */
  activeConfig(): ConfigBundle | undefined;
}

/** Roles as Talos reads them: trimmed, empty ones dropped, each once, sorted; unknown roles are kept. */
export function parseRoles(roles: readonly string[]): string[] {
  return [...new Set(roles.map((r) => r.trim()).filter((r) => r !== ""))].sort();
}

/** "reader@<cluster>" for one role, the cluster name otherwise. */
export function contextName(roles: readonly string[], clusterName: string): string {
  return roles.length === 1 ? `${roles[0]!.replace(/^os:/, "")}@${clusterName}` : clusterName;
}

export function generateClientConfiguration(ctx: ClientConfigContext) {
  return async (req: GenerateClientConfigurationRequest) => {
    const config = ctx.activeConfig();
    const doc = config?.v1alpha1();
    if (!config || !doc)
      throw new ConflictError("client configuration (talosconfig) can't be generated without a machine configuration");
    if (config.machineType === "worker")
      throw new ConflictError("client configuration (talosconfig) can't be generated on worker nodes");
    const ttlMs = (req.crt_ttl?.seconds ?? 0) * 1000 + (req.crt_ttl?.nanos ?? 0) / 1e6;
    if (!(ttlMs > 0)) throw new InvalidInputError("crt_ttl should be positive", { crtTtl: req.crt_ttl });
    const roles = parseRoles(req.roles ?? []);
    // Config generation (and @peculiar/x509 with it) loads on the first call, not on every machined start.
    const { issueClientCredentials, secretsBundleFromConfig, talosconfigYaml } = await import(
      "../../config/generate/index.js"
    );
    // The secrets reader takes the document as the plain object the YAML parser produced.
    const secrets = secretsBundleFromConfig(doc as unknown as Record<string, unknown>);
    const credentials = await issueClientCredentials(secrets, { roles, lifetimeMs: ttlMs });
    const talosconfig = talosconfigYaml(contextName(roles, doc.cluster?.clusterName ?? ""), credentials);
    return {
      messages: [
        {
          ca: Buffer.from(credentials.caPem),
          crt: Buffer.from(credentials.certPem),
          key: Buffer.from(credentials.keyPem),
          talosconfig: Buffer.from(talosconfig),
        },
      ],
    };
  };
}
