import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parse } from "yaml";
import { InvalidInputError, NotFoundError } from "../errors.js";
import { pemFromBase64 } from "../pki/index.js";

/** One talosconfig context with its PEM material decoded. */
export interface TalosContext {
  name: string;
  endpoints: string[];
  nodes: string[];
  ca: string;
  crt: string;
  key: string;
}

/** Default location, as talosctl: $TALOSCONFIG, else ~/.talos/config. */
export function defaultTalosconfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return env["TALOSCONFIG"] ?? path.join(os.homedir(), ".talos", "config");
}

/** Parses talosconfig text and returns the named (or current) context. */
export function parseTalosconfig(text: string, contextName?: string): TalosContext {
  const doc = (parse(text) ?? {}) as { context?: string; contexts?: Record<string, Record<string, unknown>> };
  const name = contextName ?? doc.context;
  if (!name) throw new InvalidInputError("talosconfig has no current context");
  const ctx = doc.contexts?.[name];
  if (!ctx) throw new NotFoundError(`context ${JSON.stringify(name)} is not defined in talosconfig`);
  const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : []);
  return {
    name,
    endpoints: list(ctx["endpoints"]),
    nodes: list(ctx["nodes"]),
    ca: pemFromBase64(ctx["ca"]),
    crt: pemFromBase64(ctx["crt"]),
    key: pemFromBase64(ctx["key"]),
  };
}

export function loadTalosconfig(file = defaultTalosconfigPath(), contextName?: string): TalosContext {
  return parseTalosconfig(readFileSync(file, "utf8"), contextName);
}
