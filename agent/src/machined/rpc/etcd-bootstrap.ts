// Bootstrap and EtcdRecover, as Talos's v1alpha1 server answers them. Bootstrap checks that this
// is a control plane whose time is in sync and whose etcd has no data, then has etcd started
// again as a new one-member cluster (restoring the uploaded snapshot first with recover_etcd);
// EtcdRecover stores the uploaded snapshot where that start finds it.
import type * as grpc from "@grpc/grpc-js";
import { createWriteStream } from "node:fs";
import { rm, stat } from "node:fs/promises";
import path from "node:path";
import { AlreadyExistsError, ConflictError, describeError, SystemError } from "../../errors.js";
import { logger } from "../../log.js";
import { unaryHandler, type AnyHandler } from "../../grpc/server.js";
import type { MachineTypeName } from "../../resources/catalog/config.js";
import type { ResourceState } from "../../resources/state.js";
import { timeSynced } from "../../services/conditions.js";
import { isDirEmpty } from "../../services/definitions/etcd.js";
import type { ServiceDefinition } from "../../services/service.js";
import type { Supervisor } from "../../services/supervisor.js";
import type { EtcdPaths } from "../../sys/etcd/paths.js";

const log = logger("etcd");

export interface EtcdBootstrapRequest {
  recover: boolean;
  skipHashCheck: boolean;
}

export interface BootstrapContext {
  machineType(): MachineTypeName | undefined;
  state: ResourceState;
  paths: EtcdPaths;
  /** Whether the boot has come far enough for a bootstrap (Talos's IsBootstrapAllowed); unset: always. */
  bootstrapAllowed?(): boolean;
  /** Starts etcd again in bootstrap mode (bootstrapEtcd below, wired to the supervisor). */
  bootstrapEtcd(req: EtcdBootstrapRequest): Promise<void>;
}

/** How long Bootstrap waits for time sync (Talos: 5 s). */
const timeSyncWaitMs = 5000;

export function bootstrapHandler(ctx: BootstrapContext): AnyHandler {
  return unaryHandler(async (req: { recover_etcd?: boolean; recover_skip_hash_check?: boolean }) => {
    log.info("bootstrap request received");
    if (ctx.bootstrapAllowed && !ctx.bootstrapAllowed()) throw new ConflictError("bootstrap is not available yet");
    if (ctx.machineType() === "worker")
      throw new ConflictError("bootstrap can only be performed on a control plane node");
    await timeSynced(ctx.state)
      .wait(AbortSignal.timeout(timeSyncWaitMs))
      .catch(() => {
        throw new ConflictError("time is not in sync yet");
      });
    if (!(await isDirEmpty(ctx.paths.dataDir))) throw new AlreadyExistsError("etcd data directory is not empty");
    await ctx.bootstrapEtcd({
      recover: req.recover_etcd === true,
      skipHashCheck: req.recover_skip_hash_check === true,
    });
    return { messages: [{}] };
  });
}

/**
 * Talos's BootstrapEtcd: stops the waiting etcd (its state ends Finished), refuses a data
 * directory that is no longer empty, and starts etcd in bootstrap mode without waiting for it.
 */
export async function bootstrapEtcd(
  supervisor: Pick<Supervisor, "stop" | "start">,
  bootstrapService: (req: EtcdBootstrapRequest) => ServiceDefinition,
  dataDir: string,
  req: EtcdBootstrapRequest,
): Promise<void> {
  await supervisor.stop("etcd", "Bootstrap requested").catch((err: unknown) => {
    throw new SystemError("failed to stop etcd", {}, { cause: err });
  });
  if (!(await isDirEmpty(dataDir))) throw new SystemError("etcd data directory is not empty");
  supervisor
    .start(bootstrapService(req))
    .catch((err: unknown) => log.warn(`error starting etcd in bootstrap mode: ${describeError(err)}`));
}

/** EtcdRecover: the uploaded snapshot, written to /var/lib/etcd.snapshot (0700), removed again if the upload fails. */
export function recoverHandler(ctx: BootstrapContext, requireControlPlane: (api: string) => void): AnyHandler {
  return async (
    call: grpc.ServerReadableStream<{ bytes?: Buffer }, unknown>,
    callback: grpc.sendUnaryData<unknown>,
  ) => {
    const file = ctx.paths.recoverySnapshot;
    const dirExists = await stat(path.dirname(file)).then(
      () => true,
      (err: NodeJS.ErrnoException) => (err.code === "ENOENT" ? false : Promise.reject(err)),
    );
    if (!dirExists) throw new ConflictError("etcd service is not ready for recovery yet");
    requireControlPlane("etcd recover");
    const out = createWriteStream(file, { mode: 0o700, flush: true });
    const opened = new Promise<void>((resolve, reject) => out.once("open", () => resolve()).once("error", reject));
    try {
      await opened.catch((err: unknown) => {
        throw new SystemError("error creating etcd recovery snapshot", {}, { cause: err });
      });
      for await (const msg of call) {
        const bytes = (msg as { bytes?: Buffer }).bytes;
        if (bytes && bytes.length > 0 && !out.write(bytes))
          await new Promise<void>((resolve) => out.once("drain", resolve));
      }
      await new Promise<void>((resolve, reject) =>
        out.end((err?: Error | null) =>
          err ? reject(new SystemError("error writing snapshot", {}, { cause: err })) : resolve(),
        ),
      );
    } catch (err) {
      out.destroy();
      await rm(file, { force: true });
      throw err;
    }
    callback(null, { messages: [{}] });
  };
}
