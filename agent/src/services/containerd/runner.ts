import { promises as fs } from "node:fs";
import path from "node:path";
import { describeError, NotFoundError, SystemError } from "../../errors.js";
import { logger } from "../../log.js";
import type { ContainerdClient } from "../../sys/containerd/client.js";
import type { Mount } from "../../sys/containerd/types.js";
import { withLease } from "../images/store.js";
import type { RunContext, ServiceRunner } from "../service.js";
import { LogFollower } from "./log-follower.js";
import { ociSpec, ociSpecTypeUrl, type ContainerProcessSpec } from "./oci-spec.js";

/** Talos's system containers run in this containerd namespace. */
export const SYSTEM_NAMESPACE = "system";

const SIGTERM = 15;
const SIGKILL = 9;

/** A task ended with a non-zero exit code. */
export class TaskExitError extends SystemError {
  constructor(
    readonly id: string,
    readonly exitCode: number,
  ) {
    super(`task ${JSON.stringify(id)} failed: exit code ${exitCode}`, { code: exitCode });
  }
}

/** A container root other than a host directory: an image's snapshot. */
export interface ContainerRoot {
  /** Makes the root for container `id`: the image it comes from, its snapshot, and the mounts of the task's rootfs. */
  prepare(
    client: ContainerdClient,
    id: string,
  ): Promise<{ image: string; snapshotter: string; snapshotKey: string; mounts: Mount[] }>;
  /** Removes what prepare made (also an earlier run's leftover); nothing there is no error. */
  remove(client: ContainerdClient, id: string): Promise<void>;
}

export interface ContainerRunnerSpec {
  id: string;
  /** A client of the containerd it runs on, in its namespace (`system`). */
  client: () => ContainerdClient;
  /** Built when the service starts (its environment and mounts may come from resources), from the run's context. */
  process: (ctx: RunContext | undefined) => Promise<ContainerProcessSpec>;
  /** Unset: the process spec's rootfs is a host directory. */
  root?: ContainerRoot;
  /** The file the task's stdout and stderr are appended to. */
  logFile: string;
  /** Receives the task's output as it is written (machined's log, as a child process's output is). */
  output?: (chunk: Buffer) => void;
  stopTimeoutMs?: number;
}

/**
 * Runs a service as a containerd task: a container whose root is a directory on the host (or, given
 * a ContainerRoot, an image's snapshot), one task,
 * its exit reported as a process's. A container left from an earlier run (machined restarted) is
 * removed first, as Talos's runner does.
 */
export class ContainerRunner implements ServiceRunner {
  private readonly log;
  private running: { exited: Promise<number>; abort: AbortController } | undefined;
  private follower: LogFollower | undefined;
  pid: number | undefined;

  constructor(private readonly spec: ContainerRunnerSpec) {
    this.log = logger(spec.id);
  }

  async start(onExit: (err: Error | undefined) => void, ctx?: RunContext): Promise<void> {
    const client = this.spec.client();
    const id = this.spec.id;
    await this.removeLeftover(client);
    const spec = ociSpec(await this.spec.process(ctx));
    const create = async (c: ContainerdClient) => {
      const root = await this.spec.root?.prepare(c, id);
      await c
        .createContainer({
          id,
          labels: {},
          image: root?.image ?? "",
          runtime: { name: "io.containerd.runc.v2" },
          spec: { type_url: ociSpecTypeUrl, value: Buffer.from(JSON.stringify(spec)) },
          snapshotter: root?.snapshotter ?? "",
          snapshot_key: root?.snapshotKey ?? "",
        })
        .catch(async (err: unknown) => {
          await this.spec.root?.remove(c, id).catch(() => undefined);
          throw err;
        });
      return root;
    };
    // A prepared snapshot nothing refers to yet is garbage to containerd's GC: a lease holds it until the container does.
    const root = this.spec.root ? await withLease(client, create) : await create(client);
    await fs.mkdir(path.dirname(this.spec.logFile), { recursive: true });
    // The task's output joins the service's log (`talosctl logs ext-<name>`), as a process's does.
    const log = ctx?.openOutput();
    const follower = new LogFollower(this.spec.logFile, (chunk) => {
      log?.write(chunk);
      this.spec.output?.(chunk);
    });
    await follower.start();
    this.follower = follower;
    const uri = `file://${this.spec.logFile}`;
    const abort = new AbortController();
    try {
      // Talos's words for these failures (a missing entrypoint fails the create, in runc).
      await client
        .createTask({ container_id: id, stdout: uri, stderr: uri, ...(root ? { rootfs: root.mounts } : {}) })
        .catch((err: unknown) => {
          throw taskError("create", id, err);
        });
      const exited = client.waitTask(id, abort.signal);
      exited.catch(() => undefined);
      this.pid = await client.startTask(id).catch((err: unknown) => {
        throw taskError("start", id, err);
      });
      this.running = { exited, abort };
      this.log.debug("task started", { pid: this.pid });
      const ended = async (err: Error | undefined) => {
        if (this.running?.exited !== exited) return;
        this.running = undefined;
        // The exit is reported even when containerd cannot clean up (it may be what failed); nothing awaits this chain.
        await this.cleanUp(client).catch((e: unknown) =>
          this.log.warn("cleaning up the ended task failed", { error: describeError(e) }),
        );
        onExit(err);
      };
      exited.then(
        (status) => ended(status === 0 ? undefined : new TaskExitError(id, status)),
        (err: unknown) =>
          ended(new SystemError(`waiting for task ${id} failed: ${describeError(err)}`, {}, { cause: err })),
      );
    } catch (err) {
      abort.abort();
      await this.cleanUp(client);
      throw err;
    }
  }

  /** As Talos names its containerd runner. */
  describe(): string {
    return `Containerd(${this.spec.id})`;
  }

  async stop(): Promise<void> {
    const running = this.running;
    if (!running) return;
    this.running = undefined;
    const client = this.spec.client();
    const id = this.spec.id;
    await client
      .killTask(id, SIGTERM, true)
      .catch((err: unknown) => this.log.warn("SIGTERM failed", { error: describeError(err) }));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<"timeout">(
      (resolve) => (timer = setTimeout(() => resolve("timeout"), this.spec.stopTimeoutMs ?? 10_000)),
    );
    const outcome = await Promise.race([running.exited.catch(() => "gone" as const), timedOut]);
    clearTimeout(timer);
    if (outcome === "timeout") {
      this.log.warn("task did not stop on SIGTERM: sending SIGKILL");
      await client.killTask(id, SIGKILL, true).catch(() => undefined);
      await running.exited.catch(() => undefined);
    }
    running.abort.abort();
    await this.cleanUp(client);
  }

  /** Deletes the task and the container, and stops following the output. */
  private async cleanUp(client: ContainerdClient): Promise<void> {
    await this.follower?.stop();
    this.follower = undefined;
    this.pid = undefined;
    await client.deleteTask(this.spec.id).catch(ignoreNotFound);
    await client.deleteContainer(this.spec.id).catch(ignoreNotFound);
    await this.spec.root?.remove(client, this.spec.id);
  }

  private async removeLeftover(client: ContainerdClient): Promise<void> {
    const exists = await client.getContainer(this.spec.id).then(
      () => true,
      (err: unknown) => (err instanceof NotFoundError ? false : Promise.reject(err)),
    );
    // A snapshot can outlive its container (machined stopped between the two deletes), as Talos cleans up.
    if (!exists) return this.spec.root?.remove(client, this.spec.id);
    this.log.info("removing the container of an earlier run");
    const task = await client.getTask(this.spec.id).catch(ignoreNotFound);
    if (task) {
      const exited = client.waitTask(this.spec.id).catch(() => undefined);
      await client.killTask(this.spec.id, SIGKILL, true).catch(ignoreNotFound);
      await exited;
      await client.deleteTask(this.spec.id).catch(ignoreNotFound);
    }
    await client.deleteContainer(this.spec.id).catch(ignoreNotFound);
    await this.spec.root?.remove(client, this.spec.id);
  }
}

/**
 * A failed create or start as Talos's runner words it: `failed to create task: "<id>": <containerd's message>`.
 * Only containerd's own message follows, as Go's client shows it; its code stays in the fields (a cause
 * would repeat the message in the service's event).
 */
function taskError(step: "create" | "start", id: string, err: unknown): SystemError {
  const status = grpcStatusOf(err);
  const reason = status ? status.details : describeError(err);
  return new SystemError(
    `failed to ${step} task: ${JSON.stringify(id)}: ${reason}`,
    { id, ...(status ? { code: status.code } : {}) },
    status ? {} : { cause: err },
  );
}

/** containerd's status in an error's cause chain (our client keeps it as the cause). */
function grpcStatusOf(err: unknown): { code: number; details: string } | undefined {
  for (let cur = err; cur instanceof Error; cur = cur.cause) {
    const { code, details } = cur as Partial<{ code: unknown; details: unknown }>; // a grpc-js ServiceError carries both
    if (typeof code === "number" && typeof details === "string") return { code, details };
  }
  return undefined;
}

function ignoreNotFound(err: unknown): undefined {
  if (err instanceof NotFoundError) return undefined;
  throw err;
}
