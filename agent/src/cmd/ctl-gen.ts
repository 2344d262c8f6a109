// `ctl gen secrets` and `ctl gen config`, with talosctl's file handling: existing
// outputs are never overwritten without --force, and nothing is written if any
// output already exists.
import { access, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import {
  checkClusterOptions,
  generateConfigs,
  generateSecretsBundle,
  loadSecretsBundle,
  secretsBundleToYaml,
} from "../config/generate/index.js";
import { applyPatches } from "../config/patch/apply.js";
import { InvalidInputError } from "../errors.js";
import { parseFlags } from "../flags.js";

export interface CtlIO {
  /** Output proper (stdout): usage, or a generated file written to `-`. */
  out(text: string): void;
  /** Progress for the user (stderr), e.g. "created <file>". */
  log(line: string): void;
  cwd(): string;
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

export async function refuseExisting(files: string[], force: boolean): Promise<void> {
  if (force) return;
  for (const file of files) {
    if (await exists(file)) throw new InvalidInputError(`${file} already exists, use --force to overwrite`);
  }
}

// Every output holds secrets: owner-only.
export async function writeSecretFile(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text, { mode: 0o600 });
}

function str(flags: Record<string, string | boolean | string[]>, ...names: string[]): string | undefined {
  for (const n of names) {
    const v = flags[n];
    if (typeof v === "string") return v;
  }
  return undefined;
}

export async function genSecrets(argv: string[], io: CtlIO): Promise<void> {
  const { flags, positional } = parseFlags(argv, { o: "string", "output-file": "string", force: "boolean" });
  if (positional.length > 0) throw new InvalidInputError(`gen secrets takes no arguments, got ${positional.join(" ")}`);
  const file = path.resolve(io.cwd(), str(flags, "o", "output-file") ?? "secrets.yaml");
  await refuseExisting([file], flags.force === true);
  const bundle = await generateSecretsBundle();
  await writeSecretFile(file, secretsBundleToYaml(bundle));
  io.log(`created ${file}`);
}

const patchFlags = ["config-patch", "config-patch-control-plane", "config-patch-worker"] as const;
type PatchFlag = (typeof patchFlags)[number];

/**
 * Takes the repeatable `--config-patch*` flags out of argv (their values may hold
 * commas, which the shared flag parser would split).
 */
export function extractPatchFlags(argv: string[]): { rest: string[]; patches: Record<PatchFlag, string[]> } {
  const patches: Record<PatchFlag, string[]> = {
    "config-patch": [],
    "config-patch-control-plane": [],
    "config-patch-worker": [],
  };
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const m = /^--(config-patch(?:-control-plane|-worker)?)(?:=(.*))?$/s.exec(arg);
    if (!m) {
      rest.push(arg);
      continue;
    }
    const value = m[2] ?? argv[++i];
    if (value === undefined) throw new InvalidInputError(`flag --${m[1]} needs a value`);
    patches[m[1] as PatchFlag].push(value);
  }
  return { rest, patches };
}

/** A patch is inline YAML/JSON or `@file`, as talosctl takes it. */
async function readPatches(values: string[], cwd: string): Promise<string[]> {
  return Promise.all(
    values.map((v) => (v.startsWith("@") ? readFile(path.resolve(cwd, v.slice(1)), "utf8") : Promise.resolve(v))),
  );
}

export async function genConfig(argv: string[], io: CtlIO): Promise<void> {
  const { rest, patches } = extractPatchFlags(argv);
  const common = await readPatches(patches["config-patch"], io.cwd());
  const controlPlanePatches = [...common, ...(await readPatches(patches["config-patch-control-plane"], io.cwd()))];
  const workerPatches = [...common, ...(await readPatches(patches["config-patch-worker"], io.cwd()))];
  const { flags, positional } = parseFlags(rest, {
    o: "string",
    output: "string",
    "output-dir": "string",
    "output-types": "list",
    t: "list",
    "with-secrets": "string",
    "install-disk": "string",
    "install-image": "string",
    "kubernetes-version": "string",
    "additional-sans": "list",
    "dns-domain": "string",
    force: "boolean",
  });
  if (positional.length !== 2) {
    throw new InvalidInputError("gen config needs exactly two arguments: <cluster-name> <https://endpoint:port>");
  }
  const [clusterName, endpoint] = positional as [string, string];
  const installDisk = str(flags, "install-disk");
  const installImage = str(flags, "install-image");
  const kubernetesVersion = str(flags, "kubernetes-version");
  const dnsDomain = str(flags, "dns-domain");
  // Bad arguments fail before anything is generated or touched.
  checkClusterOptions({ clusterName, endpoint, ...(kubernetesVersion !== undefined ? { kubernetesVersion } : {}) });
  const destinations = outputDestinations(flags, io.cwd());
  await refuseExisting(
    destinations.flatMap((d) => (d.file === "-" ? [] : [d.file])),
    flags.force === true,
  );

  const secretsFile = str(flags, "with-secrets");
  const secrets = secretsFile ? loadSecretsBundle(await readFile(path.resolve(io.cwd(), secretsFile))) : undefined;
  if (!secrets) io.log("generating PKI and tokens");
  const configs = await generateConfigs({
    clusterName,
    endpoint,
    ...(secrets ? { secrets } : {}),
    ...(installDisk !== undefined ? { installDisk } : {}),
    ...(installImage !== undefined ? { installImage } : {}),
    ...(kubernetesVersion !== undefined ? { kubernetesVersion } : {}),
    ...(dnsDomain !== undefined ? { dnsDomain } : {}),
    additionalSANs: (flags["additional-sans"] as string[] | undefined) ?? [],
  });
  // Patch before writing anything, so a bad patch leaves no partial output.
  const texts: Record<OutputType, string> = {
    controlplane: applyPatches(configs.controlplane, controlPlanePatches),
    worker: applyPatches(configs.worker, workerPatches),
    talosconfig: configs.talosconfig,
  };
  for (const { type, file } of destinations) {
    if (file === "-") {
      io.out(texts[type]);
      continue;
    }
    await writeSecretFile(file, texts[type]);
    io.log(`created ${file}`);
  }
}

const outputTypes = ["controlplane", "worker", "talosconfig"] as const;
type OutputType = (typeof outputTypes)[number];
const outputFileNames: Record<OutputType, string> = {
  controlplane: "controlplane.yaml",
  worker: "worker.yaml",
  talosconfig: "talosconfig",
};

/**
 * Where each requested output goes, as talosctl decides: `--output-types` picks
 * outputs (default all three); with several, `-o`/`--output-dir` is a directory;
 * with one, `-o` is the file itself (`-` = stdout).
 */
function outputDestinations(
  flags: Record<string, string | boolean | string[]>,
  cwd: string,
): { type: OutputType; file: string }[] {
  const requested = (flags["output-types"] as string[] | undefined) ??
    (flags.t as string[] | undefined) ?? [...outputTypes];
  for (const t of requested) {
    if (!(outputTypes as readonly string[]).includes(t)) {
      throw new InvalidInputError(`unknown output type ${JSON.stringify(t)}, want one of ${outputTypes.join(", ")}`);
    }
  }
  const types = [...new Set(requested)] as OutputType[];
  if (types.length === 0) throw new InvalidInputError("--output-types must name at least one output");
  const outputDir = str(flags, "output-dir");
  const output = str(flags, "o", "output");
  if (types.length === 1 && outputDir === undefined && output !== undefined) {
    return [{ type: types[0]!, file: output === "-" ? "-" : path.resolve(cwd, output) }];
  }
  if (output === "-") throw new InvalidInputError("-o - (stdout) needs exactly one --output-types entry");
  const dir = path.resolve(cwd, outputDir ?? output ?? ".");
  return types.map((type) => ({ type, file: path.join(dir, outputFileNames[type]) }));
}
