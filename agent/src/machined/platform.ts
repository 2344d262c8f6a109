import { readFileSync } from "node:fs";
import { InvalidInputError } from "../errors.js";
import { cmdlineArgs } from "../sys/cmdline.js";

/** Where the node runs: decides install, config sources and validation mode. */
export interface Platform {
  name: string;
  /** PlatformInfo.mode as Talos reports it: "metal", "cloud" or "container". */
  mode: "metal" | "cloud" | "container";
}

const known = new Set([
  "metal", "nocloud", "aws", "azure", "gcp", "digital-ocean", "hcloud", "openstack", "oracle", "opennebula",
  "equinixMetal", "packet", "exoscale", "scaleway", "upcloud", "vmware", "vultr", "akamai", "container",
]);

/** Every value of each kernel argument, in order ("" for a bare word). */
export function parseCmdline(cmdline: string): Map<string, string[]> {
  const args = new Map<string, string[]>();
  for (const [key, value = ""] of cmdlineArgs(cmdline)) args.set(key, [...(args.get(key) ?? []), value]);
  return args;
}

export function readCmdline(file = "/proc/cmdline"): Map<string, string[]> {
  try {
    return parseCmdline(readFileSync(file, "utf8"));
  } catch {
    return new Map();
  }
}

/** `talos.platform=` (or env PLATFORM) names the platform; an unknown one fails boot, as on Talos. */
export function detectPlatform(cmdline: Map<string, string[]>, env: NodeJS.ProcessEnv = process.env): Platform {
  const name = env["PLATFORM"] ?? cmdline.get("talos.platform")?.at(-1);
  if (!name) throw new InvalidInputError("no platform given: pass talos.platform= on the kernel command line");
  if (!known.has(name)) throw new InvalidInputError(`unknown platform "${name}"`, { platform: name });
  if (name === "container") return { name, mode: "container" };
  if (name === "metal") return { name, mode: "metal" };
  return { name, mode: "cloud" };
}

export const sandboxPlatform: Platform = { name: "container", mode: "container" };
