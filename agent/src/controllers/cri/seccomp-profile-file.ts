import { promises as fs } from "node:fs";
import path from "node:path";
import { SystemError } from "../../errors.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CRI_NAMESPACE, SeccompProfileType, type SeccompProfileSpec } from "../../resources/catalog/cri.js";
import { MountStatusType, RUNTIME_NAMESPACE } from "../../resources/catalog/runtime.js";
import { marshalGoJson } from "../../resources/go-json.js";

/** Where the kubelet finds the profiles, below /var (Talos's constants.SeccompProfilesDirectory). */
export const SECCOMP_PROFILES_DIRECTORY = "/var/lib/kubelet/seccomp/profiles";

export interface SeccompProfileFileOptions {
  /** SECCOMP_PROFILES_DIRECTORY on this node (under the sandbox's state directory there). */
  directory: string;
  /** machined runs in a container, where /var is always there. */
  container: boolean;
}

/**
 * Writes each SeccompProfile as its value's JSON (Go's encoding) to a file named after it in the
 * kubelet's seccomp profiles directory, once EPHEMERAL is mounted, and removes everything else
 * there. A file whose bytes are already right is left untouched.
 */
export class SeccompProfileFileController implements Controller {
  readonly name = "cri.SeccompProfileFileController";
  readonly inputs = [
    { namespace: RUNTIME_NAMESPACE, type: MountStatusType, id: "EPHEMERAL", kind: "weak" as const },
    { namespace: CRI_NAMESPACE, type: SeccompProfileType, kind: "weak" as const },
  ];
  readonly outputs = [];

  constructor(private readonly opts: SeccompProfileFileOptions) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    if (!this.opts.container && !ctx.get(RUNTIME_NAMESPACE, MountStatusType, "EPHEMERAL")) return;
    const dir = this.opts.directory;
    // machined's /var setup makes it with this mode too; here it is there whatever ran first.
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    const wanted = new Set<string>();
    for (const profile of ctx.list<SeccompProfileSpec>(CRI_NAMESPACE, SeccompProfileType)) {
      const { name, value } = profile.spec;
      if (!isPlainFileName(name)) {
        ctx.log.error("seccomp profile name is not a file name, not written", { name });
        continue;
      }
      await writeIfChanged(path.join(dir, name), marshalGoJson(value));
      wanted.add(name);
    }
    for (const entry of await fs.readdir(dir)) {
      if (!wanted.has(entry)) await fs.rm(path.join(dir, entry), { recursive: true, force: true });
    }
  }
}

/** A name that stays inside the directory (the config does not restrict it). */
function isPlainFileName(name: string): boolean {
  return name !== "" && name !== "." && name !== ".." && !name.includes("/") && !name.includes("\0");
}

async function writeIfChanged(file: string, content: string): Promise<void> {
  const current = await fs.readFile(file, "utf8").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw new SystemError(`reading seccomp profile ${file}`, { file }, { cause: err });
  });
  if (current === content) return;
  await fs.writeFile(file, content, { mode: 0o644 }).catch((err: unknown) => {
    throw new SystemError(`writing seccomp profile ${file}`, { file }, { cause: err });
  });
}
