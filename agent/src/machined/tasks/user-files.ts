// `.machine.files` written at boot as Talos's writeUserFiles does: create only under /var;
// a file elsewhere (overwrite or append an existing regular file) is written to /var/<path>
// and bind-mounted read-only over <path>; Kubernetes manifests are written in place.

import { promises as fs } from "node:fs";
import path from "node:path";
import type { ConfigBundle } from "../../config/bundle.js";
import type { MachineFile } from "../../config/types/v1alpha1.js";
import { InvalidInputError, SystemError } from "../../errors.js";
import { logger } from "../../log.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { criCustomizationFile } from "../../services/cri/config.js";
import type { MachineRuntime } from "../runtime.js";
import { ownsDisks } from "../runtime.js";

const log = logger("machined");

const manifestsDirectory = "/etc/kubernetes/manifests";

export interface UserFilesTarget {
  /** Where the node's "/" is (a scratch directory in the sandbox). */
  root: string;
  /** Binds `source` read-only over `target`; absent in the sandbox, which leaves the copy in /var. */
  bindReadOnly?: (source: string, target: string) => Promise<void>;
}

/** One failed file among several (Talos's multierror); the boot fails with all of them. */
export class UserFilesError extends SystemError {}

async function existingFile(p: string, shown: string): Promise<void> {
  let stat;
  try {
    stat = await fs.stat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT")
      throw new InvalidInputError(`file must exist: "${shown}"`, { path: shown });
    throw err;
  }
  if (!stat.isFile()) throw new InvalidInputError(`invalid mode: "${shown}" is not a regular file`, { path: shown });
}

async function writeWithMode(p: string, content: string, mode: number): Promise<void> {
  await fs.writeFile(p, content, { mode });
  // writeFile's mode applies only to a file it creates (and through the umask).
  await fs.chmod(p, mode);
}

/** Writes every file; one failing does not stop the others, except `create` outside /var, which ends the task as on Talos. */
export async function writeUserFiles(files: readonly MachineFile[], target: UserFilesTarget): Promise<void> {
  const failures: string[] = [];
  const at = (p: string) => path.join(target.root, p);
  for (const f of files) {
    const file = f.path ?? "";
    // Not a file of its own: the CRI configuration controller merges it into conf.d/cri.toml, as Talos injects it.
    if (file === criCustomizationFile) continue;
    const mode = (f.permissions ?? 0o644) & 0o7777;
    let content = f.content ?? "";
    try {
      if (f.op === "overwrite" || f.op === "append") await existingFile(at(file), file);
      else if (f.op !== "create")
        throw new InvalidInputError(`unknown operation for file "${file}": "${f.op ?? ""}"`, { path: file });
      if (f.op === "append") content = (await fs.readFile(at(file), "utf8")) + "\n" + content;

      if (path.posix.dirname(file) === manifestsDirectory) {
        await writeWithMode(at(file), content, mode);
        continue;
      }
      const inVar = file.replace(/^\/+/, "").split("/")[0] === "var";
      if (!inVar && f.op === "create") {
        throw new UserFilesError(`create operation not allowed outside of /var: "${file}"`, { path: file, failures });
      }
      const written = inVar ? at(file) : at(path.posix.join("/var", file));
      await fs.mkdir(path.dirname(written), { recursive: true, mode: 0o755 });
      await writeWithMode(written, content, mode);
      if (!inVar && target.bindReadOnly) await target.bindReadOnly(written, at(file));
    } catch (err) {
      if (err instanceof UserFilesError) throw err;
      failures.push(`${file}: ${(err as Error).message}`);
    }
  }
  if (failures.length > 0)
    throw new UserFilesError(`${failures.length} file(s) not written: ${failures.join("; ")}`, { failures });
}

/** The boot task: the active config's files, bound over the root on a node. */
export async function writeUserFilesTask(r: MachineRuntime): Promise<void> {
  const files =
    r.state.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec.v1alpha1()?.machine
      ?.files ?? [];
  await writeUserFiles(files, {
    root: r.paths.root,
    ...(ownsDisks(r)
      ? { bindReadOnly: (source: string, to: string) => r.mounter.mount(source, to, "none", ["bind", "ro"]) }
      : {}),
  });
  if (files.length > 0) log.info("machine files written", { files: files.map((f) => f.path) });
}
