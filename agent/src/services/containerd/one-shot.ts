// A program from an image run once as a containerd task, to its end, for what it prints: the
// container and its snapshot are the ImageRunner's (leftovers of an interrupted run removed first,
// everything removed after), the output captured, the exit code returned rather than thrown.
// Talos calls libraries in-process where we run their tools (etcdutl for a restore).
//
// containerd's shim writes a task's stdout and stderr to the one file a file:// URI names (its
// stderr URI is ignored), so the output is both streams interleaved as the program wrote them.
import { promises as fs } from "node:fs";
import path from "node:path";
import { SystemError } from "../../errors.js";
import { ImageRunner, type ImageRunnerSpec } from "./image-runner.js";
import { TaskExitError, type ContainerRunner } from "./runner.js";

/** How a task ended and what it wrote (stdout and stderr interleaved). */
export interface TaskResult {
  exitCode: number;
  output: Buffer;
}

/** The task was stopped before it ended (its caller gave up). */
export class TaskAbortedError extends SystemError {}

/** Where a one-shot task's output is captured, under `dir`. */
export function taskOutputFile(dir: string, id: string): string {
  return path.join(dir, `${id}.output`);
}

/**
 * Starts `runner` (whose logFile is `outputFile`) and waits for its task to end: its exit code and
 * output, read once containerd has deleted the task (the shim has copied everything by then).
 * An abort stops the task (SIGTERM, then SIGKILL) and rejects.
 */
export async function runToEnd(
  runner: ContainerRunner,
  id: string,
  outputFile: string,
  signal?: AbortSignal,
): Promise<TaskResult> {
  await fs.rm(outputFile, { force: true });
  const aborted = () =>
    new TaskAbortedError(`task ${JSON.stringify(id)} was stopped before it ended`, { id }, { cause: signal?.reason });
  if (signal?.aborted) throw aborted();
  let onAbort: (() => void) | undefined;
  try {
    const ended = await new Promise<Error | undefined>((resolve, reject) => {
      const stop = () => void runner.stop().then(() => reject(aborted()), reject);
      runner.start(resolve).then(() => {
        // An abort while the image was pulled or the task created stops it now.
        if (signal?.aborted) return stop();
        onAbort = stop;
        signal?.addEventListener("abort", stop, { once: true });
      }, reject);
    });
    if (ended !== undefined && !(ended instanceof TaskExitError)) throw ended;
    // A task that wrote nothing may leave no file.
    const output = await fs
      .readFile(outputFile)
      .catch((err: NodeJS.ErrnoException) => (err.code === "ENOENT" ? Buffer.alloc(0) : Promise.reject(err)));
    return { exitCode: ended?.exitCode ?? 0, output };
  } finally {
    if (onAbort) signal?.removeEventListener("abort", onAbort);
    await fs.rm(outputFile, { force: true });
  }
}

export type ImageTaskSpec = Omit<ImageRunnerSpec, "logFile" | "output" | "stopTimeoutMs"> & {
  /** The directory the output is captured in while the task runs. */
  outputDir: string;
  signal?: AbortSignal;
};

/** Runs the image's program once in containerd (pulled through the registry mirrors unless present). */
export async function runImageTask(spec: ImageTaskSpec): Promise<TaskResult> {
  const { outputDir, signal, ...image } = spec;
  const outputFile = taskOutputFile(outputDir, spec.id);
  return runToEnd(new ImageRunner({ ...image, logFile: outputFile }), spec.id, outputFile, signal);
}
