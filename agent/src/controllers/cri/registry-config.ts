import { promises as fs } from "node:fs";
import path from "node:path";
import type { ConfigBundle } from "../../config/bundle.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { criPluginConfig, type CriPaths, type CriPluginOptions } from "../../services/cri/config.js";
import { generateHosts, syncHosts } from "../../services/cri/hosts.js";

/**
 * Writes the CRI containerd's registry configuration from `.machine.registries` of the active
 * config, as Talos's CRIRegistryConfigController: conf.d/cri.toml (config_path and auths; read when
 * containerd starts) and the hosts directories (read on every pull, so mirrors apply at once).
 */
export class CriRegistryConfigController implements Controller {
  readonly name = "files.CRIRegistryConfigController";
  readonly inputs = [{ namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const }];
  readonly outputs = [];

  constructor(
    private readonly paths: CriPaths,
    private readonly options: CriPluginOptions = {},
  ) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const registries = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1()?.machine?.registries;
    const hosts = generateHosts(registries, this.paths.hosts);
    await fs.mkdir(path.dirname(this.paths.criPart), { recursive: true, mode: 0o700 });
    const part = criPluginConfig(registries, this.paths, this.options);
    const current = await fs.readFile(this.paths.criPart, "utf8").catch(() => undefined);
    // Written whole then renamed: containerd (re)starting never reads half a file.
    if (current !== part) {
      await fs.writeFile(`${this.paths.criPart}.tmp`, part, { mode: 0o600 });
      await fs.rename(`${this.paths.criPart}.tmp`, this.paths.criPart);
    }
    await syncHosts(this.paths.hosts, hosts);
  }
}
