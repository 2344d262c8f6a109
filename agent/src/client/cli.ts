// talosctl-like call commands over our client: version, apply-config, get,
// services, disks. Each entry has the shape `basalt ctl` uses for its command
// table ({ path, usage, run(argv, io) }), so ctl.ts can list them.
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { applyModeNames } from "../api/enums.js";
import { InvalidInputError, NotFoundError } from "../errors.js";
import { parseArgs, type FlagSpec } from "../flags.js";
import { NodeClient, type ClientCredentials } from "./client.js";
import { defaultTalosconfigPath, loadTalosconfig } from "./talosconfig.js";

export interface CliIO {
  out(line: string): void;
  cwd(): string;
}

interface Flags {
  endpoints: string[];
  nodes: string[];
  insecure: boolean;
  talosconfig?: string;
  context?: string;
  values: Record<string, string | boolean>;
  positional: string[];
}

/** talosctl's global flags; their keys have no dashes, so they cannot collide with a command's own. */
const globalFlags: Readonly<Record<string, FlagSpec>> = {
  "-e": { key: "endpoints", kind: "list" },
  "--endpoints": { key: "endpoints", kind: "list" },
  "-n": { key: "nodes", kind: "list" },
  "--nodes": { key: "nodes", kind: "list" },
  "-i": { key: "insecure", kind: "boolean" },
  "--insecure": { key: "insecure", kind: "boolean" },
  "--talosconfig": { key: "talosconfig", kind: "string" },
  "--context": { key: "context", kind: "string" },
};

/** Parses talosctl's global flags plus the command's own (`valueFlags` take a value, others are booleans), keyed as spelled. */
export function parseCallFlags(argv: string[], valueFlags: string[] = [], boolFlags: string[] = []): Flags {
  const own: Record<string, FlagSpec> = {};
  for (const name of valueFlags) own[name] = { key: name, kind: "string" };
  for (const name of boolFlags) own[name] = { key: name, kind: "boolean" };
  const { flags, positional } = parseArgs(argv, { ...own, ...globalFlags });
  const f: Flags = {
    endpoints: (flags["endpoints"] as string[] | undefined) ?? [],
    nodes: (flags["nodes"] as string[] | undefined) ?? [],
    insecure: flags["insecure"] === true,
    values: {},
    positional,
  };
  if (typeof flags["talosconfig"] === "string") f.talosconfig = flags["talosconfig"];
  if (typeof flags["context"] === "string") f.context = flags["context"];
  for (const name of Object.keys(own)) {
    const v = flags[name];
    if (typeof v === "string" || typeof v === "boolean") f.values[name] = v;
  }
  return f;
}

interface Target {
  client: NodeClient;
  /** What talosctl shows in the NODE column. */
  label: string;
}

/**
 * One client per target, as talosctl: with --insecure each node is dialled
 * directly with no metadata; otherwise the first endpoint with mTLS and the
 * node named in `node` metadata (so apid routes it).
 */
function targets(f: Flags): Target[] {
  if (f.insecure) {
    const nodes = f.nodes.length ? f.nodes : f.endpoints;
    if (nodes.length === 0) throw new InvalidInputError("--insecure needs the node address in -n/--nodes");
    const creds: ClientCredentials = { kind: "insecure" };
    return nodes.map((n) => ({ client: new NodeClient({ endpoint: n, credentials: creds }), label: n }));
  }
  const ctx = loadTalosconfig(f.talosconfig ?? defaultTalosconfigPath(), f.context);
  const endpoint = f.endpoints[0] ?? ctx.endpoints[0];
  if (!endpoint) throw new InvalidInputError("no endpoint: pass -e or set endpoints in the talosconfig context");
  const creds: ClientCredentials = { kind: "mtls", ca: ctx.ca, crt: ctx.crt, key: ctx.key };
  const nodes = f.nodes.length ? f.nodes : ctx.nodes;
  if (nodes.length === 0) return [{ client: new NodeClient({ endpoint, credentials: creds }), label: endpoint }];
  return nodes.map((n) => ({ client: new NodeClient({ endpoint, credentials: creds, node: n }), label: n }));
}

async function eachTarget(f: Flags, fn: (t: Target) => Promise<void>): Promise<void> {
  const all = targets(f);
  try {
    for (const t of all) await fn(t);
  } finally {
    // Every client, including those a failed call left unused, so no channel outlives the command.
    for (const t of all) t.client.close();
  }
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]! + 3)))
      .join("")
      .trimEnd(),
  );
}

type Msg = Record<string, unknown> & { metadata?: { hostname?: string } | null };
const messages = (reply: unknown): Msg[] => (reply as { messages?: Msg[] }).messages ?? [];

function humanSize(bytes: number): string {
  const units = ["B", "kB", "MB", "GB", "TB", "PB"];
  let v = bytes;
  let u = 0;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1).replace(/\.0$/, "")} ${units[u]}`;
}

const diskTypes = ["UNKNOWN", "SSD", "HDD", "NVME", "SD"];

async function version(argv: string[], io: CliIO): Promise<void> {
  const f = parseCallFlags(argv, [], ["--short"]);
  await eachTarget(f, async (t) => {
    for (const m of messages(await t.client.version())) {
      const v = (m["version"] ?? {}) as Record<string, string>;
      io.out(`NODE:        ${m.metadata?.hostname || t.label}`);
      io.out(`\tTag:         ${v["tag"]}`);
      if (f.values["--short"]) continue;
      io.out(`\tSHA:         ${v["sha"]}`);
      io.out(`\tBuilt:       ${v["built"]}`);
      io.out(`\tGo version:  ${v["go_version"]}`);
      io.out(`\tOS/Arch:     ${v["os"]}/${v["arch"]}`);
      const features = m["features"] as { rbac?: boolean } | null | undefined;
      if (features) io.out(`\tEnabled:     ${features.rbac ? "RBAC" : ""}`);
    }
  });
}

async function applyConfig(argv: string[], io: CliIO): Promise<void> {
  const f = parseCallFlags(argv, ["-f", "--file", "-m", "--mode"], ["--dry-run"]);
  const file = (f.values["-f"] ?? f.values["--file"]) as string | undefined;
  if (!file) throw new InvalidInputError("apply-config needs -f/--file");
  const modeName = ((f.values["-m"] ?? f.values["--mode"]) as string | undefined) ?? "auto";
  const mode = applyModeNames.get(modeName);
  if (mode === undefined) throw new InvalidInputError(`unknown mode ${JSON.stringify(modeName)}`);
  const data = readFileSync(path.resolve(io.cwd(), file));
  await eachTarget(f, async (t) => {
    for (const m of messages(
      await t.client.applyConfiguration(data, { mode, dryRun: f.values["--dry-run"] === true }),
    )) {
      for (const w of (m["warnings"] as string[] | undefined) ?? []) io.out(`Warning: ${w}`);
      if (m["mode_details"]) io.out(String(m["mode_details"]));
    }
  });
}

async function services(argv: string[], io: CliIO): Promise<void> {
  const f = parseCallFlags(argv);
  const rows = [["NODE", "SERVICE", "STATE", "HEALTH", "LAST CHANGE", "LAST EVENT"]];
  await eachTarget(f, async (t) => {
    for (const m of messages(await t.client.serviceList())) {
      for (const s of (m["services"] as Record<string, unknown>[] | undefined) ?? []) {
        const health = (s["health"] ?? {}) as { unknown?: boolean; healthy?: boolean };
        const events = (s["events"] as { events?: { msg: string; ts?: { seconds: number } }[] } | null)?.events ?? [];
        const last = events.at(-1);
        const ago = last?.ts ? `${Math.max(0, Math.round(Date.now() / 1000 - last.ts.seconds))}s ago` : "";
        rows.push([
          m.metadata?.hostname || t.label,
          String(s["id"]),
          String(s["state"]),
          health.unknown ? "?" : health.healthy ? "OK" : "Fail",
          ago,
          last?.msg ?? "",
        ]);
      }
    }
  });
  for (const line of table(rows)) io.out(line);
}

async function disks(argv: string[], io: CliIO): Promise<void> {
  const f = parseCallFlags(argv);
  const rows = [
    [
      "NODE",
      "DEV",
      "MODEL",
      "SERIAL",
      "TYPE",
      "UUID",
      "WWID",
      "MODALIAS",
      "NAME",
      "SIZE",
      "BUS_PATH",
      "SUBSYSTEM",
      "READ_ONLY",
      "SYSTEM_DISK",
    ],
  ];
  const dash = (v: unknown) => (v === "" || v === undefined || v === null ? "-" : String(v));
  await eachTarget(f, async (t) => {
    for (const m of messages(await t.client.disks())) {
      for (const d of (m["disks"] as Record<string, unknown>[] | undefined) ?? []) {
        rows.push([
          m.metadata?.hostname || t.label,
          dash(d["device_name"]),
          dash(d["model"]),
          dash(d["serial"]),
          diskTypes[Number(d["type"])] ?? "UNKNOWN",
          dash(d["uuid"]),
          dash(d["wwid"]),
          dash(d["modalias"]),
          dash(d["name"]),
          humanSize(Number(d["size"])),
          dash(d["bus_path"]),
          dash(d["subsystem"]),
          d["readonly"] ? "*" : "",
          d["system_disk"] ? "*" : "",
        ]);
      }
    }
  });
  for (const line of table(rows)) io.out(line);
}

interface RD {
  id: string;
  type: string;
  displayType: string;
  defaultNamespace: string;
  allAliases: string[];
}

/** Resolves a user's word to a resource definition the way talosctl does (id or any alias, case-insensitive). */
export function resolveType(defs: RD[], word: string): RD {
  const w = word.toLowerCase();
  const found = defs.filter((d) => d.id === w || d.allAliases.map((a) => a.toLowerCase()).includes(w));
  if (found.length === 0) throw new NotFoundError(`resource ${JSON.stringify(word)} is not registered`);
  if (found.length > 1)
    throw new InvalidInputError(
      `resource type ${JSON.stringify(word)} is ambiguous: ${found.map((d) => d.type).join(", ")}`,
    );
  return found[0]!;
}

async function get(argv: string[], io: CliIO): Promise<void> {
  const f = parseCallFlags(argv, ["--namespace", "-o", "--output"]);
  const [word, id] = f.positional;
  if (!word) throw new InvalidInputError("get needs a resource type");
  const output = ((f.values["-o"] ?? f.values["--output"]) as string | undefined) ?? "table";
  const rows = [["NODE", "NAMESPACE", "TYPE", "ID", "VERSION"]];
  await eachTarget(f, async (t) => {
    const rds = (await t.client.resourceList("meta", "ResourceDefinitions.meta.cosi.dev")) as {
      resource: { metadata: { id: string }; spec: { yaml_spec: string } };
    }[];
    const defs: RD[] = rds.map((r) => {
      const s = parseYaml(r.resource.spec.yaml_spec) as Omit<RD, "id">;
      return { ...s, id: r.resource.metadata.id, allAliases: s.allAliases ?? [] };
    });
    const def = resolveType(defs, word);
    const ns = (f.values["--namespace"] as string | undefined) ?? def.defaultNamespace;
    const resources = id
      ? [((await t.client.resourceGet(ns, def.type, id)) as { resource: WireRes }).resource]
      : ((await t.client.resourceList(ns, def.type)) as { resource: WireRes }[]).map((r) => r.resource);
    for (const r of resources) {
      if (output === "yaml") {
        io.out(
          `node: ${t.label}\nmetadata:\n    namespace: ${r.metadata.namespace}\n    type: ${def.displayType}\n    id: ${r.metadata.id}\n    version: ${r.metadata.version}\n    owner: ${r.metadata.owner}\n    phase: ${r.metadata.phase}\nspec:\n${r.spec.yaml_spec
            .trimEnd()
            .split("\n")
            .map((l) => "    " + l)
            .join("\n")}\n---`,
        );
      } else {
        rows.push([t.label, r.metadata.namespace, def.displayType, r.metadata.id, r.metadata.version]);
      }
    }
  });
  if (output !== "yaml") for (const line of table(rows)) io.out(line);
}

interface WireRes {
  metadata: { namespace: string; id: string; version: string; owner: string; phase: string };
  spec: { yaml_spec: string };
}

const globals = "[-e endpoint] [-n node] [--insecure] [--talosconfig F] [--context C]";

/** Call commands for `basalt ctl`. */
export const callCommands: { path: string[]; usage: string; run: (argv: string[], io: CliIO) => Promise<void> }[] = [
  { path: ["version"], usage: `version [--short] ${globals}`, run: version },
  {
    path: ["apply-config"],
    usage: `apply-config -f FILE [--mode auto|reboot|no-reboot|staged|try] [--dry-run] ${globals}`,
    run: applyConfig,
  },
  { path: ["get"], usage: `get <type> [id] [--namespace NS] [-o table|yaml] ${globals}`, run: get },
  { path: ["services"], usage: `services ${globals}`, run: services },
  { path: ["disks"], usage: `disks ${globals}`, run: disks },
];
