// `basalt ctl installer build|push`: writes the installer image archive (the image
// build runs it) and pushes an archive to a registry with our own OCI client.

import { promises as fs } from "node:fs";
import path from "node:path";
import { InvalidInputError } from "../errors.js";
import { RepositoryClient } from "../oci/client.js";
import { registryEndpoints, type RegistryEndpoint } from "../oci/hosts.js";
import { buildInstallerArchive, type InstallerArch, type InstallerPlatform } from "../oci/installer.js";
import { LayoutArchive } from "../oci/layout.js";
import { parseImageReference } from "../oci/reference.js";
import { contractTag } from "../machined/version.js";
import type { CtlIO } from "./ctl-gen.js";
import { parseFlags, type ParsedArgs } from "../flags.js";

/** installer build --output F [--version V] --platform arch=KERNEL,INITRAMFS [--platform ...] */
export async function installerBuild(argv: string[], io: CtlIO): Promise<void> {
  const { flags } = parseFlags(argv, { output: "string", version: "string", platform: "list" });
  const out = typeof flags.output === "string" ? path.resolve(io.cwd(), flags.output) : undefined;
  const version = typeof flags.version === "string" ? flags.version : contractTag;
  const specs = (flags.platform as string[] | undefined) ?? [];
  if (!out || specs.length === 0)
    throw new InvalidInputError("installer build needs --output and at least one --platform arch=kernel,initramfs");
  // The list flag split "arch=kernel,initramfs" on its comma: rejoin each pair.
  const platforms: InstallerPlatform[] = [];
  for (let i = 0; i < specs.length; i += 2) {
    const m = /^(amd64|arm64)=(.+)$/.exec(specs[i]!);
    if (!m || specs[i + 1] === undefined)
      throw new InvalidInputError(`--platform ${specs[i]}: expected arch=KERNEL,INITRAMFS (arch amd64 or arm64)`);
    platforms.push({
      arch: m[1] as InstallerArch,
      kernel: path.resolve(io.cwd(), m[2]!),
      initramfs: path.resolve(io.cwd(), specs[i + 1]!),
    });
  }
  await buildInstallerArchive(out, version, platforms);
  io.out(`${out}: ${platforms.map((p) => p.arch).join(", ")}, ${(await fs.stat(out)).size} bytes`);
}

/** The endpoint of a registry named host[:port], plain HTTP with --insecure, with --ca and --username/--password applied. */
export async function registryEndpointFor(
  host: string,
  flags: ParsedArgs["flags"],
  io: CtlIO,
): Promise<RegistryEndpoint> {
  const endpoint = `${flags.insecure === true ? "http" : "https"}://${host}`;
  const [target] = registryEndpoints(
    {
      mirrors: { [host]: { endpoints: [endpoint] } },
      config: {
        [host]: {
          ...(typeof flags.ca === "string"
            ? { tls: { ca: await fs.readFile(path.resolve(io.cwd(), flags.ca), "utf8") } }
            : {}),
          ...(typeof flags.username === "string"
            ? { auth: { username: flags.username, password: typeof flags.password === "string" ? flags.password : "" } }
            : {}),
        },
      },
    },
    host,
  );
  // registryEndpoints gives one endpoint per mirror endpoint, and the mirror above has one.
  return target!;
}

/** installer push ARCHIVE REGISTRY/REPO:TAG [--insecure] (plain HTTP) [--ca F] [--username U --password P] */
export async function installerPush(argv: string[], io: CtlIO): Promise<void> {
  const { flags, positional } = parseFlags(argv, {
    insecure: "boolean",
    ca: "string",
    username: "string",
    password: "string",
  });
  const [archive, image] = positional;
  if (!archive || !image) throw new InvalidInputError("installer push needs ARCHIVE and REGISTRY/REPO:TAG");
  const ref = parseImageReference(image);
  const target = await registryEndpointFor(ref.host, flags, io);
  const layout = await LayoutArchive.open(path.resolve(io.cwd(), archive));
  const digest = await layout.push(new RepositoryClient(target, ref.repository), ref.tag ?? "latest");
  io.out(`${ref.host}/${ref.repository}:${ref.tag ?? "latest"}@${digest}`);
}
