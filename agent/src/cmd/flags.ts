import { InvalidInputError } from "../errors.js";

/** Parses `--name value` / `--name=value` / `--flag` arguments; positional ones are returned apart. */
export function parseFlags(argv: string[], known: Record<string, "string" | "boolean" | "list">): { flags: Record<string, string | boolean | string[]>; positional: string[] } {
  const flags: Record<string, string | boolean | string[]> = {};
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("-") || arg === "-") {
      positional.push(arg);
      continue;
    }
    const [rawName, inline] = arg.replace(/^--?/, "").split(/=(.*)/s, 2) as [string, string | undefined];
    const kind = known[rawName];
    if (!kind) throw new InvalidInputError(`unknown flag --${rawName}`);
    if (kind === "boolean") {
      flags[rawName] = inline === undefined ? true : inline !== "false";
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new InvalidInputError(`flag --${rawName} needs a value`);
    if (kind === "list") flags[rawName] = [...((flags[rawName] as string[] | undefined) ?? []), ...value.split(",")];
    else flags[rawName] = value;
  }
  return { flags, positional };
}
