// containerd's registry hosts directories (config_path) from `.machine.registries`, as Talos's
// GenerateHosts lays them out: one directory per mirrored registry (`host:port` named `host_port_`,
// `*` named `_default`) with a hosts.toml listing its endpoints in order, and one per registry
// that has TLS settings of its own; CA and client certificates are files beside hosts.toml.
import { promises as fs } from "node:fs";
import path from "node:path";
import { InvalidInputError } from "../../errors.js";
import type { Registries } from "../images/registry.js";
import { tomlEntries, tomlString } from "./toml.js";

export interface HostsFile {
  name: string;
  contents: Buffer;
  mode: number;
}

/** Directory name → its files, in the order Talos writes them. */
export type HostsLayout = Map<string, HostsFile[]>;

type RegistryConfig = NonNullable<Registries["config"]>[string];

/** Talos's hostDirectory: `:port` becomes `_port_`, `*` is `_default`. */
export function hostDirectory(host: string): string {
  if (host === "*") return "_default";
  const i = host.lastIndexOf(":");
  return i > 0 ? `${host.slice(0, i)}_${host.slice(i + 1)}_` : host;
}

/** containerd's docker.DefaultHost. */
function defaultHost(host: string): string {
  return host === "docker.io" ? "registry-1.docker.io" : host;
}

interface HostEntry {
  capabilities?: string[];
  overridePath?: boolean;
  ca?: string;
  client?: string[][];
  skipVerify?: boolean;
}

/** One `[host."<endpoint>"]` table as go-toml writes it (fields in HostToml's order, unset ones left out). */
function hostTable(endpoint: string, e: HostEntry): string {
  const lines = tomlEntries(
    [
      ["capabilities", e.capabilities],
      ["override_path", e.overridePath || undefined],
      ["ca", e.ca],
      ["client", e.client],
      ["skip_verify", e.skipVerify || undefined],
    ],
    "    ",
  );
  return [`\n  [host.${tomlString(endpoint)}]`, ...lines].join("\n") + "\n";
}

/** Adds `host`'s TLS settings (from `.machine.registries.config`) to `entry`, their files to `files`. */
function configureEndpoint(
  cfg: RegistryConfig | undefined,
  host: string,
  dir: string,
  base: string,
  entry: HostEntry,
  files: HostsFile[],
): void {
  const tls = cfg?.tls;
  if (!tls) return;
  if (tls.insecureSkipVerify) entry.skipVerify = true;
  if (tls.ca) {
    const name = `${host}-ca.crt`;
    files.push({ name, contents: Buffer.from(tls.ca, "base64"), mode: 0o600 });
    entry.ca = path.join(base, dir, name);
  }
  if (tls.clientIdentity?.crt && tls.clientIdentity.key) {
    const crt = `${host}-client.crt`;
    const key = `${host}-client.key`;
    files.push(
      { name: crt, contents: Buffer.from(tls.clientIdentity.crt, "base64"), mode: 0o600 },
      { name: key, contents: Buffer.from(tls.clientIdentity.key, "base64"), mode: 0o600 },
    );
    entry.client = [[path.join(base, dir, crt), path.join(base, dir, key)]];
  }
}

function endpointHost(raw: string, registry: string): string {
  try {
    return new URL(raw).host;
  } catch (err) {
    throw new InvalidInputError(`error parsing endpoint "${raw}" for host "${registry}"`, { registry }, { cause: err });
  }
}

/** The hosts directories for `registries`, their paths under `base` (where containerd reads them). */
export function generateHosts(registries: Registries | undefined, base: string): HostsLayout {
  const out: HostsLayout = new Map();
  const config = registries?.config ?? {};
  for (const [registry, mirror] of Object.entries(registries?.mirrors ?? {})) {
    const dir = hostDirectory(registry);
    const files: HostsFile[] = [];
    let text = "\n[host]\n";
    for (const endpoint of mirror.endpoints ?? []) {
      const entry: HostEntry = { capabilities: ["pull", "resolve"], overridePath: mirror.overridePath === true };
      const host = endpointHost(endpoint, registry);
      configureEndpoint(config[host], host, dir, base, entry, files);
      text += hostTable(endpoint, entry);
    }
    files.push({ name: "hosts.toml", contents: Buffer.from(text), mode: 0o600 });
    out.set(dir, files);
  }
  // Registries with TLS settings of their own that no mirror entry covers.
  for (const [host, cfg] of Object.entries(config)) {
    const dir = hostDirectory(host);
    if (out.has(dir)) continue;
    const tls = cfg.tls;
    if (tls && !tls.ca && !(tls.clientIdentity?.crt && tls.clientIdentity.key) && !tls.insecureSkipVerify) continue;
    if (host === "*") throw new InvalidInputError("wildcard host TLS configuration is not supported");
    const files: HostsFile[] = [];
    const entry: HostEntry = {};
    configureEndpoint(cfg, host, dir, base, entry, files);
    files.push({
      name: "hosts.toml",
      contents: Buffer.from("\n[host]\n" + hostTable(`https://${defaultHost(host)}`, entry)),
      mode: 0o600,
    });
    out.set(dir, files);
  }
  return out;
}

/**
 * Makes `base` hold exactly `layout`: files written where their contents differ, files and
 * directories it does not name removed (as Talos's syncHosts).
 */
export async function syncHosts(base: string, layout: HostsLayout): Promise<void> {
  await fs.mkdir(base, { recursive: true, mode: 0o700 });
  for (const [dir, files] of layout) {
    const at = path.join(base, dir);
    await fs.mkdir(at, { recursive: true, mode: 0o700 });
    for (const f of files) {
      const current = await fs.readFile(path.join(at, f.name)).catch(() => undefined);
      if (current?.equals(f.contents)) continue;
      await fs.writeFile(path.join(at, f.name), f.contents, { mode: f.mode });
    }
    const wanted = new Set(files.map((f) => f.name));
    for (const name of await fs.readdir(at))
      if (!wanted.has(name)) await fs.rm(path.join(at, name), { recursive: true, force: true });
  }
  for (const name of await fs.readdir(base))
    if (!layout.has(name)) await fs.rm(path.join(base, name), { recursive: true, force: true });
}
