// Restores an etcd data directory from a snapshot with etcdutl (what Talos does with etcd's
// snapshot library, which etcdutl wraps): a new one-member cluster with the snapshot's keys.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { SystemError } from "../../errors.js";

const run = promisify(execFile);

/** etcdutl could not read or restore the snapshot. */
export class EtcdRestoreError extends SystemError {}

/** `etcdutl snapshot status -w json`: hash, revision, keys, size. */
export interface SnapshotStatus {
  hash: number;
  revision: number;
  totalKey: number;
  totalSize: number;
}

export async function snapshotStatus(etcdutl: string, snapshot: string): Promise<SnapshotStatus> {
  try {
    const { stdout } = await run(etcdutl, ["snapshot", "status", snapshot, "-w", "json"]);
    // etcdutl's JSON output of snapshot.Status (fields hash, revision, totalKey, totalSize).
    return JSON.parse(stdout) as SnapshotStatus;
  } catch (err) {
    throw new EtcdRestoreError("error verifying snapshot", { snapshot }, { cause: err });
  }
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

export async function restoreSnapshot(etcdutl: string, o: RestoreOptions): Promise<void> {
  const args = [
    "snapshot", "restore", o.snapshot,
    `--name=${o.name}`,
    `--data-dir=${o.dataDir}`,
    `--initial-cluster=${o.initialCluster}`,
    `--initial-advertise-peer-urls=${o.peerURLs.join(",")}`,
    ...(o.skipHashCheck ? ["--skip-hash-check"] : []),
  ];
  try {
    await run(etcdutl, args);
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new EtcdRestoreError(`error recovering from the snapshot${stderr ? `: ${stderr.split("\n").at(-1)}` : ""}`, { snapshot: o.snapshot }, { cause: err });
  }
}
