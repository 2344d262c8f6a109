import { promises as fs } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { InvalidInputError } from "../../errors.js";
import type { OciMount } from "../containerd/oci-spec.js";

export type RestartKind = "always" | "never" | "untilSuccess";
export type NetworkCheck = "addresses" | "connectivity" | "hostname" | "etcfiles";

export interface ExtensionDependency {
  service?: string;
  path?: string;
  network?: NetworkCheck[];
  time?: boolean;
  configuration?: boolean;
}

/** An extension service as /usr/local/etc/containers/<name>.yaml describes it (Talos's extensions/services.Spec). */
export interface ExtensionServiceSpec {
  name: string;
  container: {
    entrypoint: string;
    args: string[];
    environment: string[];
    environmentFile?: string;
    mounts: OciMount[];
    security: {
      writeableSysfs: boolean;
      writeableRootfs: boolean;
      maskedPaths?: string[];
      readonlyPaths?: string[];
      rootfsPropagation?: string;
    };
  };
  depends: ExtensionDependency[];
  restart: RestartKind;
}

const nameRe = /^[-_a-z0-9]+$/;
const restartKinds: readonly string[] = ["always", "never", "untilSuccess"];
const networkChecks: readonly string[] = ["addresses", "connectivity", "hostname", "etcfiles"];

type Obj = Record<string, unknown>;

function obj(v: unknown, where: string): Obj {
  if (v === undefined || v === null) return {};
  if (typeof v !== "object" || Array.isArray(v)) throw new InvalidInputError(`${where} must be a mapping`);
  return v as Obj;
}

function strings(v: unknown, where: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string"))
    throw new InvalidInputError(`${where} must be a list of strings`);
  return v as string[];
}

function optString(v: unknown, where: string): string | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string") throw new InvalidInputError(`${where} must be a string`);
  return v;
}

/** Parses and validates one service file, with Talos's rules; every problem is reported at once. */
export function parseExtensionService(text: string, file: string): ExtensionServiceSpec {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new InvalidInputError(`${file}: ${(err as Error).message}`, { file }, { cause: err });
  }
  const problems: string[] = [];
  const top = obj(doc, file);
  const name = typeof top.name === "string" ? top.name : "";
  if (!nameRe.test(name)) problems.push(`name "${name}" is invalid`);
  const restart = (top.restart ?? "") as string;
  if (!restartKinds.includes(restart)) problems.push(`restart kind is invalid: ${restart}`);
  const c = obj(top.container, "container");
  const entrypoint = typeof c.entrypoint === "string" ? c.entrypoint : "";
  if (entrypoint === "") problems.push("container endpoint can't be empty");
  const sec = obj(c.security, "container.security");
  const mounts = (Array.isArray(c.mounts) ? c.mounts : []).map((m: unknown, i: number) => {
    const mo = obj(m, `container.mounts[${i}]`);
    return {
      destination: String(mo.destination ?? ""),
      type: optString(mo.type, `container.mounts[${i}].type`),
      source: String(mo.source ?? ""),
      options: strings(mo.options, `container.mounts[${i}].options`),
    };
  });
  const depends = (Array.isArray(top.depends) ? top.depends : []).map((d: unknown, i: number) => {
    const dep = obj(d, `depends[${i}]`);
    const out: ExtensionDependency = {};
    let set = 0;
    if (optString(dep.service, "service")) (out.service = dep.service as string), set++;
    if (optString(dep.path, "path")) {
      out.path = dep.path as string;
      set++;
      if (!path.isAbsolute(out.path)) problems.push(`path is not absolute: "${out.path}"`);
    }
    const network = strings(dep.network, `depends[${i}].network`);
    if (network.length > 0) {
      set++;
      for (const n of network) if (!networkChecks.includes(n)) problems.push(`invalid network dependency: ${n}`);
      out.network = network as NetworkCheck[];
    }
    if (dep.time === true) (out.time = true), set++;
    if (dep.configuration === true) (out.configuration = true), set++;
    if (set === 0) problems.push("no dependency specified");
    if (set > 1) problems.push("more than a single dependency is set");
    return out;
  });
  if (problems.length > 0) throw new InvalidInputError(`${file}: ${problems.join("; ")}`, { file, problems });
  return {
    name,
    container: {
      entrypoint,
      args: strings(c.args, "container.args"),
      environment: strings(c.environment, "container.environment"),
      environmentFile: optString(c.environmentFile, "container.environmentFile"),
      mounts,
      security: {
        writeableSysfs: sec.writeableSysfs === true,
        writeableRootfs: sec.writeableRootfs === true,
        maskedPaths: sec.maskedPaths === undefined ? undefined : strings(sec.maskedPaths, "security.maskedPaths"),
        readonlyPaths:
          sec.readonlyPaths === undefined ? undefined : strings(sec.readonlyPaths, "security.readonlyPaths"),
        rootfsPropagation: optString(sec.rootfsPropagation, "security.rootfsPropagation"),
      },
    },
    depends,
    restart: restart as RestartKind,
  };
}

/**
 * Every valid service file in `dir` (`<name>.yaml`), sorted by name; an invalid one is reported to
 * `invalid` and skipped (as Talos skips it), so one bad file does not keep the others from running.
 */
export async function loadExtensionServices(
  dir: string,
  invalid: (file: string, err: unknown) => void,
): Promise<ExtensionServiceSpec[]> {
  const names = await fs
    .readdir(dir)
    .catch((err: NodeJS.ErrnoException) => (err.code === "ENOENT" ? [] : Promise.reject(err)));
  const out: ExtensionServiceSpec[] = [];
  for (const f of names.filter((n) => n.endsWith(".yaml")).sort()) {
    const file = path.join(dir, f);
    try {
      out.push(parseExtensionService(await fs.readFile(file, "utf8"), file));
    } catch (err) {
      invalid(file, err);
    }
  }
  return out;
}

/** Parses an environment file: KEY=value lines, `#` comments, optional `export ` and quotes. */
export function parseEnvironmentFile(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim().replace(/^export\s+/, "");
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) throw new InvalidInputError(`environment file line is not KEY=value: ${raw}`);
    let value = line.slice(eq + 1).trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0]))
      value = value.slice(1, -1);
    out.push(`${line.slice(0, eq).trim()}=${value}`);
  }
  return out;
}
