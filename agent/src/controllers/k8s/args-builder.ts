// Command-line flags of a control plane component: Talos's defaults merged with the
// config's extraArgs under per-flag policies, rendered `--key=value` sorted by key.

import { InvalidInputError } from "../../errors.js";

/** overwrite: extraArgs wins (the default); additive: comma lists are joined without duplicates; denied: extraArgs may not set it. */
export type MergePolicy = "overwrite" | "additive" | "denied";

/** An extraArgs key that may not be overridden. */
export class DeniedArgError extends InvalidInputError {}

export class Args {
  private readonly values: Map<string, string>;

  constructor(defaults: Record<string, string>) {
    this.values = new Map(Object.entries(defaults));
  }

  set(key: string, value: string): void {
    this.values.set(key, value);
  }

  /** Merges `extra` over the defaults; the first denied key fails the whole merge. */
  merge(extra: Record<string, string>, policies: Record<string, MergePolicy> = {}): void {
    for (const [key, value] of Object.entries(extra)) {
      const policy = policies[key] ?? "overwrite";
      if (policy === "denied") throw new DeniedArgError(`extra arg "${key}" is not allowed`, { arg: key });
      this.values.set(key, policy === "additive" ? additive(this.values.get(key) ?? "", value) : value);
    }
  }

  /** `--key=value` for every flag, keys in byte order. */
  render(): string[] {
    return [...this.values.keys()].sort(byteOrder).map((k) => `--${k}=${this.values.get(k)}`);
  }
}

function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** The current list (empty entries dropped) followed by the new entries not already in it (compared trimmed). */
function additive(current: string, extra: string): string {
  const values = current.split(",").filter((v) => v !== "");
  const defined = new Set(current.split(",").map((v) => v.trim()));
  for (const raw of extra.split(",")) {
    const v = raw.trim();
    if (!defined.has(v)) values.push(v);
  }
  return values.join(",");
}
