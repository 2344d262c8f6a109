import { promises as fs } from "node:fs";
import path from "node:path";
import type { ConfigBundle } from "../../config/bundle.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  criCustomizationFile,
  criPluginConfig,
  type CriPaths,
  type CriPluginOptions,
} from "../../services/cri/config.js";
import { mergeTomlParts } from "../../services/cri/toml-merge.js";
import { generateHosts, syncHosts } from "../../services/cri/hosts.js";

/**
 * Writes the CRI containerd's registry configuration from `.machine.registries` of the active
 * config, as Talos's CRIRegistryConfigController: conf.d/cri.toml (config_path and auths; read when
 * containerd starts) and the hosts directories (read on every pull, so mirrors apply at once).
 * cri.toml is the generated part with conf.d/*.part merged into it key by key in name order, as
 * Talos's CRIConfigPartsController merges them; the config's machine.files entry for
 * /etc/cri/conf.d/20-customization.part is written there first, as Talos injects it.
 */
export class CriRegistryConfigController implements Controller {
  readonly name = "files.CRIRegistryConfigController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
  ];
  readonly outputs = [];

  constructor(
    private readonly paths: CriPaths,
    private readonly options: CriPluginOptions = {},
  ) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const machine = ctx
      .get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)
      ?.spec.v1alpha1()?.machine;
    const registries = machine?.registries;
    const hosts = generateHosts(registries, this.paths.hosts);
    await fs.mkdir(path.dirname(this.paths.criPart), { recursive: true, mode: 0o700 });
    await syncCustomization(this.paths, machine?.files?.find((f) => f.path === criCustomizationFile)?.content);
    const part = mergeTomlParts(
      criPluginConfig(registries, this.paths, this.options),
      await readParts(this.paths.confd),
    );
    const current = await fs.readFile(this.paths.criPart, "utf8").catch(() => undefined);
    // Written whole then renamed: containerd (re)starting never reads half a file.
    if (current !== part) {
      await fs.writeFile(`${this.paths.criPart}.tmp`, part, { mode: 0o600 });
      await fs.rename(`${this.paths.criPart}.tmp`, this.paths.criPart);
    }
    await syncHosts(this.paths.hosts, hosts);
  }
}

/** conf.d/*.part in name order (Talos globs and sorts them). */
async function readParts(confd: string): Promise<{ name: string; text: string }[]> {
  const names = (await fs.readdir(confd).catch(() => [] as string[])).filter((n) => n.endsWith(".part")).sort();
  return Promise.all(
    names.map(async (n) => ({ name: path.join(confd, n), text: await fs.readFile(path.join(confd, n), "utf8") })),
  );
}

/** conf.d/20-customization.part holds the config's customization (mode 0600), and nothing without one. */
async function syncCustomization(p: CriPaths, content: string | undefined): Promise<void> {
  const file = path.join(p.confd, path.basename(criCustomizationFile));
  if (content === undefined) {
    await fs.rm(file, { force: true });
    return;
  }
  const current = await fs.readFile(file, "utf8").catch(() => undefined);
  if (current !== content) await fs.writeFile(file, content, { mode: 0o600 });
}
