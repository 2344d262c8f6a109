import { readFileSync } from "node:fs";
import { InvalidInputError, SystemError } from "../errors.js";
import { cmdlineArgs } from "../sys/cmdline.js";

/** Where the node runs: decides install, config sources and validation mode. */
export interface Platform {
  name: string;
  /** PlatformInfo.mode as Talos reports it: "metal", "cloud" or "container". */
  mode: "metal" | "cloud" | "container";
}

const known = new Set([
  "metal",
  "nocloud",
  "aws",
  "azure",
  "gcp",
  "digital-ocean",
  "hcloud",
  "openstack",
  "oracle",
  "opennebula",
  "equinixMetal",
  "packet",
  "exoscale",
  "scaleway",
  "upcloud",
  "vmware",
  "vultr",
  "akamai",
  "container",
]);

/** Every value of each kernel argument, in order ("" for a bare word). */
export function parseCmdline(cmdline: string): Map<string, string[]> {
  const args = new Map<string, string[]>();
  for (const [key, value = ""] of cmdlineArgs(cmdline)) args.set(key, [...(args.get(key) ?? []), value]);
  return args;
}

/** The kernel's arguments; a cmdline that cannot be read is an error (not an empty one that later reads as "no platform given"). */
export function readCmdline(file = "/proc/cmdline"): Map<string, string[]> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    // The cause rides on the chain; describeError prints it after this message.
    throw new SystemError(`could not read the kernel command line ${file}`, { file }, { cause: err });
  }
  return parseCmdline(text);
}

/** `talos.platform=` (or env PLATFORM) names the platform; an unknown one fails boot, as on Talos. */
export function detectPlatform(cmdline: Map<string, string[]>, env: NodeJS.ProcessEnv = process.env): Platform {
  const name = env["PLATFORM"] ?? cmdline.get("talos.platform")?.at(-1);
  if (!name) throw new InvalidInputError("no platform given: pass talos.platform= on the kernel command line");
  if (!known.has(name)) throw new InvalidInputError(`unknown platform "${name}"`, { platform: name });
  if (name === "container") return { name, mode: "container" };
  // Equinix Metal's machines are bare metal: Talos runs it in metal mode (installs, as on metal).
  if (name === "metal" || name === "equinixMetal" || name === "packet") return { name, mode: "metal" };
  return { name, mode: "cloud" };
}

export const sandboxPlatform: Platform = { name: "container", mode: "container" };

/** The sandbox as a node of a cloud platform: config and metadata from that platform, the rest as in a container. */
export function sandboxPlatformOf(name: string): Platform {
  if (!known.has(name)) throw new InvalidInputError(`unknown platform "${name}"`, { platform: name });
  return { name, mode: "container" };
}
