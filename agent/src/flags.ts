// Command-line flag parsing shared by the process entry points (cmd/) and the
// talosctl-like client commands (client/): `--name value`, `--name=value`,
// `--flag` / `--flag=false`, comma-separated lists; everything else is positional.
import { InvalidInputError } from "./errors.js";

export type FlagKind = "string" | "boolean" | "list";
export type FlagValue = string | boolean | string[];

export interface FlagSpec {
  /** The key the value is stored under (several spellings may share one). */
  key: string;
  kind: FlagKind;
}

export interface ParsedArgs {
  flags: Record<string, FlagValue>;
  positional: string[];
}

/**
 * Parses argv against `spellings`, which maps every accepted spelling, dashes
 * included ("-n", "--nodes"), to where its value goes. A lone "-" is
 * positional. List values split on commas (trimmed, blanks dropped) and
 * accumulate over repeats; a repeated string flag keeps the last value.
 */
export function parseArgs(argv: readonly string[], spellings: Readonly<Record<string, FlagSpec>>): ParsedArgs {
  const flags: Record<string, FlagValue> = {};
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("-") || arg === "-") {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    const inline = eq > 0 ? arg.slice(eq + 1) : undefined;
    // hasOwn: "--constructor" must not find Object.prototype's.
    const spec = Object.hasOwn(spellings, name) ? spellings[name] : undefined;
    if (!spec) throw new InvalidInputError(`unknown flag ${name}`);
    if (spec.kind === "boolean") {
      flags[spec.key] = inline === undefined ? true : inline !== "false";
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new InvalidInputError(`flag ${name} needs a value`);
    if (spec.kind === "list") {
      const items = value
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
      flags[spec.key] = [...((flags[spec.key] as string[] | undefined) ?? []), ...items];
    } else {
      flags[spec.key] = value;
    }
  }
  return { flags, positional };
}

/** parseArgs for flags named without dashes; each is accepted as `-name` and `--name` and stored under `name`. */
export function parseFlags(argv: readonly string[], known: Readonly<Record<string, FlagKind>>): ParsedArgs {
  const spellings: Record<string, FlagSpec> = {};
  for (const [key, kind] of Object.entries(known)) spellings[`-${key}`] = spellings[`--${key}`] = { key, kind };
  return parseArgs(argv, spellings);
}
