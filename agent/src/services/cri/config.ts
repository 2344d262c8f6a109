// The CRI containerd's configuration as Talos lays it out: a main file (Talos's /etc/cri/containerd.toml:
// the plugins it disables, json logs at info) importing conf.d/cri.toml, the CRI plugin's settings
// merged from Talos's parts (runc v2 with unpacked layers discarded, the registries' config_path
// and auth) with conf.d/*.part merged into them key by key (the config's 20-customization.part
// among them), plus every other conf.d/*.toml an operator adds. containerd 1.6 merges an import
// plugin by plugin: such a .toml that configures the CRI plugin replaces cri.toml's settings of it
// whole, where a .part is merged.
import path from "node:path";
import type { Paths } from "../../sys/paths.js";
import type { Registries } from "../images/registry.js";
import { tomlEntries, tomlString, tomlValue } from "./toml.js";

export interface CriPaths {
  /** Its API socket (Talos: /run/containerd/containerd.sock). */
  socket: string;
  /** Runtime state, lost at reboot (containerd's default, /run/containerd). */
  state: string;
  /** Images, content and snapshots (containerd's default, /var/lib/containerd, on EPHEMERAL). */
  root: string;
  /** The main configuration file (Talos: /etc/cri/containerd.toml). */
  config: string;
  /** Parts imported by the main file (Talos: /etc/cri/conf.d). */
  confd: string;
  /** The generated CRI plugin part (Talos: /etc/cri/conf.d/cri.toml). */
  criPart: string;
  /** The registries' hosts directories (Talos: /etc/cri/conf.d/hosts). */
  hosts: string;
}

/** The machine.files path whose content Talos merges into the CRI configuration (constants.CRICustomizationConfigPart). */
export const criCustomizationFile = "/etc/cri/conf.d/20-customization.part";

/** On a node /etc is read-only: Talos's /etc/cri files are written under the writable /system/etc. */
export function criPaths(paths: Paths): CriPaths {
  const confd = path.join(paths.etc, "cri", "conf.d");
  return {
    socket: path.join(paths.run, "containerd", "containerd.sock"),
    state: path.join(paths.run, "containerd"),
    root: path.join(paths.var, "lib", "containerd"),
    config: path.join(paths.etc, "cri", "containerd.toml"),
    confd,
    criPart: path.join(confd, "cri.toml"),
    hosts: path.join(confd, "hosts"),
  };
}

/** Plugins Talos's CRI containerd disables (hack/cri-containerd.toml; ones this containerd lacks are ignored). */
const disabledPlugins = [
  "io.containerd.nri.v1.nri",
  "io.containerd.internal.v1.tracing",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.tracing.processor.v1.otlp",
];

/**
 * The main file: Talos's, with our paths spelled out (Talos passes the socket as --address; the
 * root and state are containerd's defaults there). `parts` are the other conf.d/*.toml files,
 * imported after cri.toml in name order.
 */
export function criContainerdConfig(p: CriPaths, parts: string[] = []): string {
  return [
    "version = 2",
    `root = ${tomlString(p.root)}`,
    `state = ${tomlString(p.state)}`,
    `disabled_plugins = ${tomlValue(disabledPlugins)}`,
    `imports = ${tomlValue([p.criPart, ...[...parts].sort().filter((f) => f !== p.criPart)])}`,
    "",
    "[grpc]",
    `  address = ${tomlString(p.socket)}`,
    "",
    "[ttrpc]",
    `  address = ${tomlString(`${p.socket}.ttrpc`)}`,
    "",
    "[debug]",
    '  level = "info"',
    '  format = "json"',
    "",
  ].join("\n");
}

/**
 * The sandbox (pause) image: Talos sets none, so containerd 1.7.18's default applies; Debian's
 * older containerd defaults to another, hence spelled out.
 */
export const sandboxImage = "registry.k8s.io/pause:3.8";

const cri = '"io.containerd.grpc.v1.cri"';

export interface CriPluginOptions {
  /**
   * Keep containers' OOM scores at or above containerd's own (its restrict_oom_score_adj). A node
   * holds CAP_SYS_RESOURCE and leaves it off, as Talos; a sandbox in a container may not hold it,
   * and then the pod sandbox's -998 would fail every pod.
   */
  restrictOomScoreAdj?: boolean;
}

/** conf.d/cri.toml: Talos's cri-plugin.part and 01-registries.part, merged. */
export function criPluginConfig(registries: Registries | undefined, p: CriPaths, opts: CriPluginOptions = {}): string {
  const lines = [
    "version = 2",
    "",
    `[plugins.${cri}]`,
    `  sandbox_image = ${tomlString(sandboxImage)}`,
    ...(opts.restrictOomScoreAdj ? ["  restrict_oom_score_adj = true"] : []),
    "",
    `[plugins.${cri}.containerd.runtimes.runc]`,
    '  runtime_type = "io.containerd.runc.v2"',
    "  discard_unpacked_layers = true",
    "",
    `[plugins.${cri}.registry]`,
    `  config_path = ${tomlString(p.hosts)}`,
  ];
  for (const [host, cfg] of Object.entries(registries?.config ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!cfg.auth) continue;
    const a = cfg.auth;
    lines.push(
      "",
      `[plugins.${cri}.registry.configs.${tomlString(host)}.auth]`,
      ...tomlEntries(
        [
          ["username", a.username ?? ""],
          ["password", a.password ?? ""],
          ["auth", a.auth ?? ""],
          ["identitytoken", a.identityToken ?? ""],
        ],
        "  ",
      ),
    );
  }
  return lines.join("\n") + "\n";
}
