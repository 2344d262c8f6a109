// Restores an etcd data directory from a snapshot with etcdutl (what Talos does with etcd's
// snapshot library, which etcdutl wraps): a new one-member cluster with the snapshot's keys.
// Where etcdutl runs is injected: a host program (the sandbox, tests) or a task from etcd's image.
import { execFile } from "node:child_process";
import { SystemError } from "../../errors.js";
import type { Logger } from "../../log.js";

/** etcdutl could not read or restore the snapshot. */
export class EtcdRestoreError extends SystemError {}

/**
 * What one etcdutl run printed, and how it exited. Its output is stdout and stderr together: a
 * containerd task's log interleaves them, so nothing here depends on which stream a line came from.
 */
export interface EtcdutlResult {
  exitCode: number;
  output: string;
}

/** Runs etcdutl with `args` to its end; rejects only when it could not be run at all. */
export type Etcdutl = (args: string[], signal?: AbortSignal) => Promise<EtcdutlResult>;

/** The etcdutl to use with etcd's image `image` (EtcdSpec.image). */
export type EtcdutlFactory = (image: string) => Etcdutl;

/** etcdutl as a host program (a path, or a name found on PATH), whatever etcd's image. */
export function hostEtcdutl(binary = "etcdutl"): EtcdutlFactory {
  return () => (args, signal) =>
    new Promise((resolve, reject) => {
      execFile(binary, args, { maxBuffer: 16 << 20, ...(signal ? { signal } : {}) }, (err, stdout, stderr) => {
        // A number is the program's exit code; anything else (ENOENT, an abort) means it did not run to its end.
        const code = (err as { code?: unknown } | null)?.code;
        if (err && typeof code !== "number") reject(err);
        else resolve({ exitCode: typeof code === "number" ? code : 0, output: stdout + stderr });
      });
    });
}

/** `etcdutl snapshot status -w json`: hash, revision, keys, size. */
export interface SnapshotStatus {
  hash: number;
  revision: number;
  totalKey: number;
  totalSize: number;
}

export function snapshotStatusArgs(snapshot: string): string[] {
  return ["snapshot", "status", snapshot, "-w", "json"];
}

export interface RestoreOptions {
  snapshot: string;
  name: string;
  dataDir: string;
  peerURLs: string[];
  /** `name=url,...` */
  initialCluster: string;
  skipHashCheck: boolean;
}

export function snapshotRestoreArgs(o: RestoreOptions): string[] {
  return [
    "snapshot",
    "restore",
    o.snapshot,
    `--name=${o.name}`,
    `--data-dir=${o.dataDir}`,
    `--initial-cluster=${o.initialCluster}`,
    `--initial-advertise-peer-urls=${o.peerURLs.join(",")}`,
    ...(o.skipHashCheck ? ["--skip-hash-check"] : []),
  ];
}

/** Runs etcdutl; a failed run is `what`, with etcdutl's last line (cobra's "Error: <err>", printed as it exits) as Talos words the library's error. */
async function runEtcdutl(
  etcdutl: Etcdutl,
  args: string[],
  what: string,
  snapshot: string,
  signal?: AbortSignal,
): Promise<string> {
  const result = await etcdutl(args, signal).catch((err: unknown) => {
    throw new EtcdRestoreError(what, { snapshot }, { cause: err });
  });
  if (result.exitCode === 0) return result.output;
  const reason =
    result.output
      .trim()
      .split("\n")
      .at(-1)
      ?.replace(/^Error: /, "") || `exit code ${result.exitCode}`;
  throw new EtcdRestoreError(`${what}: ${reason}`, { snapshot, exitCode: result.exitCode });
}

function isSnapshotStatus(v: unknown): v is SnapshotStatus {
  const o = v as Partial<Record<keyof SnapshotStatus, unknown>> | null; // read only after the typeof check
  return (
    typeof v === "object" &&
    o !== null &&
    (["hash", "revision", "totalKey", "totalSize"] as const).every((k) => typeof o[k] === "number")
  );
}

/** The status line among etcdutl's output (its logs, if any, are JSON lines too): the last with the four numbers. */
function statusLine(output: string): SnapshotStatus | undefined {
  for (const line of output.trim().split("\n").reverse()) {
    if (!line.startsWith("{")) continue;
    try {
      const v: unknown = JSON.parse(line);
      if (isSnapshotStatus(v)) return v;
    } catch {
      // Not JSON: not the status.
    }
  }
  return undefined;
}

/**
 * How many times a status run that succeeded without printing its status is made: containerd's runc
 * shim gives a task's output copy at most 2 s after the task exits before closing it, which a loaded
 * node (TCG, images unpacking) can miss. The status only reads the snapshot: running it again is safe.
 */
export const statusRuns = 3;

export async function snapshotStatus(
  etcdutl: Etcdutl,
  snapshot: string,
  opts: { signal?: AbortSignal; log?: Logger } = {},
): Promise<SnapshotStatus> {
  let output = "";
  for (let run = 1; run <= statusRuns; run++) {
    output = await runEtcdutl(etcdutl, snapshotStatusArgs(snapshot), "error verifying snapshot", snapshot, opts.signal);
    // etcdutl's JSON output of snapshot.Status (fields hash, revision, totalKey, totalSize).
    const status = statusLine(output);
    if (status) return status;
    if (run < statusRuns) opts.log?.warn("etcdutl printed no snapshot status; running it again", { run, output });
  }
  throw new EtcdRestoreError(
    `error verifying snapshot: etcdutl printed no status with hash, revision, totalKey and totalSize (${statusRuns} runs)`,
    { snapshot, output },
  );
}

export async function restoreSnapshot(etcdutl: Etcdutl, o: RestoreOptions, signal?: AbortSignal): Promise<void> {
  await runEtcdutl(etcdutl, snapshotRestoreArgs(o), "error recovering from the snapshot", o.snapshot, signal);
}
