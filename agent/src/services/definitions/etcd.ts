// etcd, as Talos v1.7 runs it on a control plane: after `cri`, once time is synced, the network
// is up and EtcdSpec exists; the pre stage prepares /var/lib/etcd (0700, etcd's user), works
// out how this start forms the cluster (bootstrap, restart, join as a learner, restore from an
// uploaded snapshot) and waits for the PKI on disk; the process runs as user 60 on the host
// network with the PKI and data directories mounted, healthy while a linearizable read answers.
//
// The process is pure data (etcdProcess); what runs it is injected: by default a host process
// of the etcd binary, or a runner of the image in CRI's containerd namespace `system`.
import { chmod, chown, mkdir, readdir, rm } from "node:fs/promises";
import path from "node:path";
import { ConflictError, describeError } from "../../errors.js";
import { logger } from "../../log.js";
import type { MachineTypeName } from "../../resources/catalog/config.js";
import {
  ETCD_NAMESPACE,
  EtcdPKIStatusId,
  EtcdPKIStatusType,
  EtcdSpecId,
  EtcdSpecType,
  type EtcdSpecSpec,
} from "../../resources/catalog/etcd.js";
import type { ResourceState } from "../../resources/state.js";
import { adminTls, EtcdClient } from "../../sys/etcd/client.js";
import { etcdUserId, type EtcdPaths } from "../../sys/etcd/paths.js";
import { hostEtcdutl, restoreSnapshot, snapshotStatus, type EtcdutlFactory } from "../../sys/etcd/restore.js";
import { allOf, networkReady, resourceExists, timeSynced } from "../conditions.js";
import { ProcessRunner } from "../process-runner.js";
import type { RunContext, ServiceDefinition, ServiceRunner } from "../service.js";
import { etcdArgs, etcdURLs, talosEtcdPorts, type EtcdClusterMode, type EtcdPorts } from "./etcd-args.js";
import { joinCluster, promoteLearner, talosJoinTiming, type EtcdCluster, type JoinTiming } from "./etcd-join.js";

const log = logger("etcd");

/** Talos's ETCD_CIPHER_SUITES. */
const cipherSuites =
  "ETCD_CIPHER_SUITES=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305";

export interface EtcdMount {
  type: "bind";
  source: string;
  destination: string;
  options: string[];
}

/** Everything a runner needs to run etcd, as Talos's containerd runner is given it. */
export interface EtcdProcess {
  id: "etcd";
  /** The image (EtcdSpec.image) and the containerd namespace Talos runs it in. */
  image: string;
  containerdNamespace: "system";
  /** argv, starting with the program's path in the image. */
  args: string[];
  /** KEY=value */
  env: string[];
  mounts: EtcdMount[];
  user: { uid: number; gid: number };
  hostNetwork: true;
  /** Talos drops every capability. */
  dropAllCapabilities: true;
  oomScoreAdj: number;
}

export interface EtcdProcessInput {
  mode: EtcdClusterMode;
  paths: EtcdPaths;
  ports?: EtcdPorts;
  init?: boolean;
  /** talos.environment and machine.env, KEY=value. */
  env?: string[];
  /** Go's GOARCH of the node (arm64 needs ETCD_UNSUPPORTED_ARCH). */
  arch?: string;
}

/** etcd's process for `spec`, as Talos's etcd service builds it. */
export function etcdProcess(spec: EtcdSpecSpec, input: EtcdProcessInput): EtcdProcess {
  const { paths } = input;
  return {
    id: "etcd",
    image: spec.image,
    containerdNamespace: "system",
    args: [
      "/usr/local/bin/etcd",
      ...etcdArgs({
        spec,
        mode: input.mode,
        dataDir: paths.dataDir,
        pkiDir: paths.pkiDir,
        ...(input.ports ? { ports: input.ports } : {}),
        ...(input.init ? { init: true } : {}),
      }),
    ],
    env: [...(input.env ?? []), ...(input.arch === "arm64" ? ["ETCD_UNSUPPORTED_ARCH=arm64"] : []), cipherSuites],
    mounts: [
      { type: "bind", destination: paths.pkiDir, source: paths.pkiDir, options: ["rbind", "ro"] },
      { type: "bind", destination: paths.dataDir, source: paths.dataDir, options: ["rbind", "rw"] },
    ],
    user: { uid: etcdUserId, gid: etcdUserId },
    hostNetwork: true,
    dropAllCapabilities: true,
    oomScoreAdj: -998,
  };
}

/** Makes the runner of one prepared etcd process (its health check given). */
export type EtcdRunnerFactory = (proc: EtcdProcess, health: () => Promise<void>) => ServiceRunner;

/** The default: etcd as a host process of `binary` (a path, or a name found on PATH). */
export function hostProcessRunner(binary = "etcd"): EtcdRunnerFactory {
  return (proc, health) =>
    new ProcessRunner({
      id: proc.id,
      command: binary,
      args: proc.args.slice(1),
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        ...Object.fromEntries(proc.env.map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)])),
      },
      user: proc.user,
      health,
      stopTimeoutMs: 30_000,
    });
}

export interface EtcdServiceOptions {
  state: ResourceState;
  /** Where the PKI and data are, on the host and (mounted at the same paths) for etcd. */
  paths: EtcdPaths;
  machineType(): MachineTypeName | undefined;
  /** Started by `talosctl bootstrap`: a new cluster of this one member. */
  bootstrap?: boolean;
  /** With bootstrap: first restore the snapshot EtcdRecover uploaded. */
  recover?: { skipHashCheck: boolean };
  /** An init node after an upgrade joins instead of forming a cluster (META's upgrade tag). */
  upgraded?: () => boolean;
  /** The running cluster a joining member adds itself to. */
  cluster: EtcdCluster;
  ports?: EtcdPorts;
  env?: () => string[];
  arch?: string;
  runner?: EtcdRunnerFactory;
  /** Where a restore runs etcdutl (a node: a task from EtcdSpec's image); default: the etcdutl on PATH. */
  etcdutl?: EtcdutlFactory;
  /** Owner of the data directory (Talos: 60:60). */
  dataOwner?: { uid: number; gid: number };
  /** Talos: ["cri"]. */
  dependsOn?: string[];
  timing?: JoinTiming;
}

/** Whether a directory has no entries (a missing one counts as empty for Bootstrap's check). */
export async function isDirEmpty(dir: string): Promise<boolean> {
  return (
    (await readdir(dir).catch((err: NodeJS.ErrnoException) => (err.code === "ENOENT" ? [] : Promise.reject(err))))
      .length === 0
  );
}

async function chownRecursive(dir: string, uid: number, gid: number): Promise<void> {
  await chown(dir, uid, gid);
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) await chownRecursive(p, uid, gid);
    else await chown(p, uid, gid);
  }
}

/** Runs whichever etcd process the pre stage prepared; its stop also ends a pre stage still waiting. */
class EtcdServiceRunner implements ServiceRunner {
  prepared: { proc: EtcdProcess; learnerId: bigint } | undefined;
  private inner: ServiceRunner | undefined;
  private client: EtcdClient | undefined;
  abort = new AbortController();

  constructor(private readonly opts: EtcdServiceOptions) {}

  async start(onExit: (err: Error | undefined) => void, ctx?: RunContext): Promise<string | void> {
    const prepared = this.prepared;
    if (!prepared) throw new ConflictError("etcd was not prepared");
    this.inner = (this.opts.runner ?? hostProcessRunner())(prepared.proc, () => this.health());
    const msg = await this.inner.start(onExit, ctx);
    if (prepared.learnerId !== 0n) {
      const signal = this.abort.signal;
      promoteLearner(this.opts.cluster, prepared.learnerId, log, signal, this.opts.timing ?? talosJoinTiming).catch(
        (err: unknown) => {
          if (!signal.aborted) log.warn(`failed promoting member: ${describeError(err)}`);
        },
      );
    }
    return msg;
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.inner?.stop();
    this.closeClient();
  }

  describe(): string {
    return this.inner?.describe?.() ?? "etcd";
  }

  /** Talos's check: a quorum read against the local member. */
  async health(): Promise<void> {
    const port = (this.opts.ports ?? talosEtcdPorts).client;
    this.client ??= new EtcdClient(`localhost:${port}`, await adminTls(this.opts.paths.pkiDir), {
      callTimeoutMs: 15_000,
    });
    await this.client.validateQuorum();
  }

  closeClient(): void {
    this.client?.close();
    this.client = undefined;
  }
}

/** The etcd service definition; a new one (bootstrap, recover) replaces the loaded one. */
export function etcdService(opts: EtcdServiceOptions): ServiceDefinition {
  const runner = new EtcdServiceRunner(opts);
  const { paths } = opts;
  const ports = opts.ports ?? talosEtcdPorts;
  const owner = opts.dataOwner ?? { uid: etcdUserId, gid: etcdUserId };

  async function clusterMode(
    spec: EtcdSpecSpec,
    init: boolean,
    signal: AbortSignal,
  ): Promise<{ mode: EtcdClusterMode; learnerId: bigint }> {
    const extra = spec.extraArgs;
    if (!init && opts.recover) await recover(spec, signal);
    if (!(await isDirEmpty(paths.dataDir))) return { mode: { kind: "existing" }, learnerId: 0n };
    const forms = init ? !opts.upgraded?.() : opts.bootstrap === true;
    if (forms || "initial-cluster" in extra) return { mode: { kind: "new" }, learnerId: 0n };
    const peerURLs = etcdURLs(spec.advertisedAddresses, ports.peer);
    const joined = await joinCluster(opts.cluster, spec.name, peerURLs, log, signal, opts.timing ?? talosJoinTiming);
    return { mode: { kind: "join", initialCluster: joined.initialCluster }, learnerId: joined.learnerId };
  }

  async function recover(spec: EtcdSpecSpec, signal: AbortSignal): Promise<void> {
    const etcdutl = (opts.etcdutl ?? hostEtcdutl())(spec.image);
    const status = await snapshotStatus(etcdutl, paths.recoverySnapshot, { signal, log });
    log.info(
      `recovering etcd from snapshot: hash ${(status.hash >>> 0).toString(16).padStart(8, "0")}, revision ${status.revision}, total keys ${status.totalKey}, total size ${status.totalSize}`,
    );
    const peerURLs = etcdURLs(spec.advertisedAddresses, ports.peer);
    await restoreSnapshot(
      etcdutl,
      {
        snapshot: paths.recoverySnapshot,
        name: spec.name,
        dataDir: paths.dataDir,
        peerURLs,
        initialCluster: `${spec.name}=${peerURLs.join(",")}`,
        skipHashCheck: opts.recover!.skipHashCheck,
      },
      signal,
    );
    await rm(paths.recoverySnapshot);
    await chownRecursive(paths.dataDir, owner.uid, owner.gid);
  }

  return {
    id: "etcd",
    dependsOn: opts.dependsOn ?? ["cri"],
    conditions: [
      allOf(
        timeSynced(opts.state),
        networkReady(opts.state, "address", "hostname", "etc-files"),
        resourceExists(opts.state, ETCD_NAMESPACE, EtcdSpecType, EtcdSpecId, undefined, "etcd spec"),
      ),
    ],
    pre: async () => {
      runner.abort = new AbortController();
      const signal = runner.abort.signal;
      // Its parents as any directory (on a node /var/lib exists); the data directory itself 0700.
      await mkdir(path.dirname(paths.dataDir), { recursive: true });
      await mkdir(paths.dataDir, { recursive: true, mode: 0o700 });
      await chmod(paths.dataDir, 0o700);
      await chownRecursive(paths.dataDir, owner.uid, owner.gid);
      const spec = opts.state.get<EtcdSpecSpec>(ETCD_NAMESPACE, EtcdSpecType, EtcdSpecId)?.spec;
      if (!spec) throw new ConflictError("failed to get etcd spec");
      const type = opts.machineType();
      if (type !== "init" && type !== "controlplane") throw new ConflictError(`unexpected machine type: ${type}`);
      const init = type === "init";
      const { mode, learnerId } = await clusterMode(spec, init, signal);
      const proc = etcdProcess(spec, {
        mode,
        paths,
        ports,
        init,
        env: opts.env?.() ?? [],
        ...(opts.arch ? { arch: opts.arch } : {}),
      });
      await resourceExists(opts.state, ETCD_NAMESPACE, EtcdPKIStatusType, EtcdPKIStatusId, undefined)
        .wait(signal)
        .catch((err: unknown) => {
          throw new ConflictError("failed to generate etcd PKI", {}, { cause: err });
        });
      runner.prepared = { proc, learnerId };
    },
    post: async () => {
      runner.abort.abort();
      runner.closeClient();
    },
    runner,
    restart: "always",
    user: { uid: etcdUserId, gid: etcdUserId },
    oomScoreAdj: -998,
  };
}
