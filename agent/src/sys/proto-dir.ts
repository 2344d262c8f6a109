// Where a directory of .proto files the agent ships is: under agent/ in the source tree (dist/ walks up to it),
// or beside the bundle.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { NotFoundError } from "../errors.js";

/** `agent/<name>` or `<name>` holding `marker`, above this module or the running script; `envVar` overrides. */
export function locateProtoDir(name: string, marker: string, envVar: string, what: string): string {
  const fromEnv = process.env[envVar];
  if (fromEnv) return path.resolve(fromEnv);
  const starts: string[] = [];
  try {
    if (import.meta.url) starts.push(path.dirname(fileURLToPath(import.meta.url)));
  } catch {
    // not a file: URL (a bundle loaded otherwise): argv below
  }
  if (process.argv[1]) starts.push(path.dirname(path.resolve(process.argv[1])));
  const searched: string[] = [];
  for (const start of starts) {
    for (let dir = start; ; dir = path.dirname(dir)) {
      for (const candidate of [path.join(dir, "agent", name), path.join(dir, name)]) {
        searched.push(candidate);
        if (fs.existsSync(path.join(candidate, marker))) return candidate;
      }
      if (path.dirname(dir) === dir) break;
    }
  }
  throw new NotFoundError(`${what} protos not found (set ${envVar}); looked in ${searched.join(", ")}`);
}
