// A sandbox brought out of maintenance mode as a user does it: started, a generated
// config applied over the insecure maintenance API, then reached over mutual TLS with
// the generated talosconfig. Shared by the integration tests that start from there.

import { NodeClient } from "../../../agent/src/client/client.js";
import { parseTalosconfig } from "../../../agent/src/client/talosconfig.js";
import { generateConfigs, type GeneratedConfigs } from "../../../agent/src/config/generate/index.js";
import { eventually, freePort, startSandbox, type SandboxProcess } from "./sandbox.js";

export interface ConfiguredSandbox {
  sandbox: SandboxProcess;
  /** apid's port on 127.0.0.1. */
  port: number;
  generated: GeneratedConfigs;
  /** The config text applied. */
  config: string;
  /** Holds the talosconfig's admin certificate; answering version() already. The caller closes it. */
  admin: NodeClient;
}

export interface ConfiguredSandboxOptions {
  clusterName: string;
  stateDir: string;
  /** The sandbox's arguments beyond its state directory and apid address. */
  args?: string[];
  /** The config to apply, made from the generated ones (default: the controlplane config as generated). */
  config?: (generated: GeneratedConfigs) => string;
}

export async function startConfiguredSandbox(o: ConfiguredSandboxOptions): Promise<ConfiguredSandbox> {
  const port = await freePort();
  const generated = await generateConfigs({
    clusterName: o.clusterName,
    endpoint: "https://127.0.0.1:6443",
    installDisk: "",
  });
  const config = o.config ? o.config(generated) : generated.controlplane;
  const sandbox = startSandbox(o.stateDir, port, o.args ?? []);
  const insecure = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "insecure" } });
  try {
    await eventually(() => insecure.disks());
    await insecure.applyConfiguration(config);
  } finally {
    insecure.close();
  }
  const admin = new NodeClient({
    endpoint: `127.0.0.1:${port}`,
    credentials: { kind: "mtls", ...parseTalosconfig(generated.talosconfig) },
  });
  await eventually(() => admin.version());
  return { sandbox, port, generated, config, admin };
}
