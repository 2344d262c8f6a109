import * as grpc from "@grpc/grpc-js";
import {
  AlreadyExistsError,
  ConflictError,
  InvalidInputError,
  NotFoundError,
  SystemError,
  type BasaltError,
} from "../../errors.js";
import { containerdService } from "./protos.js";
import type { Container, ContentInfo, Descriptor, Envelope, Image, Mount, Process } from "./types.js";

const pkg = "containerd.services";

/** containerd's metadata keys: the namespace every call acts in, and the lease that keeps what it writes. */
const NAMESPACE_KEY = "containerd-namespace";
const LEASE_KEY = "containerd-lease";

type Ctor = new (message: string, fields?: Record<string, unknown>, options?: { cause?: unknown }) => BasaltError;

/** containerd's gRPC status, as our named errors (the API edge maps them back to codes). */
export function containerdError(what: string, err: grpc.ServiceError): BasaltError {
  const byCode: Partial<Record<grpc.status, Ctor>> = {
    [grpc.status.NOT_FOUND]: NotFoundError,
    [grpc.status.ALREADY_EXISTS]: AlreadyExistsError,
    [grpc.status.INVALID_ARGUMENT]: InvalidInputError,
    [grpc.status.FAILED_PRECONDITION]: ConflictError,
  };
  const Err = byCode[err.code] ?? SystemError;
  return new Err(`containerd ${what}: ${err.details || err.message}`, { code: err.code }, { cause: err });
}

type Unary = (
  req: object,
  md: grpc.Metadata,
  cb: (err: grpc.ServiceError | null, res: unknown) => void,
) => grpc.ClientUnaryCall;
type ServerStream = (req: object, md: grpc.Metadata) => grpc.ClientReadableStream<unknown>;
type Bidi = (md: grpc.Metadata) => grpc.ClientDuplexStream<object, unknown>;

interface Stub {
  [method: string]: Unary | ServerStream | Bidi | unknown;
}

/**
 * A client of one containerd over its unix socket, acting in one namespace (and, given one, under
 * a lease). Calls answer with plain objects shaped as agent/containerd-api declares them.
 */
export class ContainerdClient {
  private readonly stubs = new Map<string, Stub>();

  constructor(
    readonly socket: string,
    readonly namespace: string,
    private readonly lease?: string,
    private readonly channel?: grpc.Channel,
  ) {}

  /** The same connection, in another namespace. */
  inNamespace(namespace: string): ContainerdClient {
    return this.derive(namespace, this.lease);
  }

  /** The same connection; what it writes is kept by lease `id` until the lease is deleted. */
  withLease(id: string | undefined): ContainerdClient {
    return this.derive(this.namespace, id);
  }

  private derive(namespace: string, lease: string | undefined): ContainerdClient {
    const c = new ContainerdClient(this.socket, namespace, lease, this.ownChannel());
    for (const [k, v] of this.stubs) c.stubs.set(k, v);
    return c;
  }

  private sharedChannel: grpc.Channel | undefined;

  private ownChannel(): grpc.Channel {
    if (this.channel) return this.channel;
    this.sharedChannel ??= new grpc.Channel(`unix:${this.socket}`, grpc.credentials.createInsecure(), {
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
      "grpc.max_send_message_length": 64 * 1024 * 1024,
    });
    return this.sharedChannel;
  }

  close(): void {
    this.sharedChannel?.close();
    this.stubs.clear();
  }

  private stub(service: string): Stub {
    let s = this.stubs.get(service);
    if (!s) {
      const Ctor = grpc.makeGenericClientConstructor(containerdService(`${pkg}.${service}`), service);
      // The generic constructor's instances carry one method per RPC; Stub names that shape.
      s = new Ctor(`unix:${this.socket}`, grpc.credentials.createInsecure(), {
        channelOverride: this.ownChannel(),
      }) as unknown as Stub;
      this.stubs.set(service, s);
    }
    return s;
  }

  private metadata(): grpc.Metadata {
    const md = new grpc.Metadata();
    md.set(NAMESPACE_KEY, this.namespace);
    if (this.lease) md.set(LEASE_KEY, this.lease);
    return md;
  }

  private unary<T>(service: string, method: string, req: object): Promise<T> {
    const s = this.stub(service);
    const fn = s[method] as Unary;
    return new Promise((resolve, reject) => {
      fn.call(s, req, this.metadata(), (err, res) => {
        // The response is the decoded message declared for this method; T names it.
        if (err) reject(containerdError(`${service}.${method}`, err));
        else resolve(res as T);
      });
    });
  }

  private serverStream<T>(service: string, method: string, req: object): grpc.ClientReadableStream<T> {
    const s = this.stub(service);
    // As unary: the stream yields the declared response messages.
    return (s[method] as ServerStream).call(s, req, this.metadata()) as grpc.ClientReadableStream<T>;
  }

  // version
  version(): Promise<{ version: string; revision: string }> {
    return this.unary("version.v1.Version", "Version", {});
  }

  // namespaces
  async namespaces(): Promise<string[]> {
    const res = await this.unary<{ namespaces: { name: string }[] }>("namespaces.v1.Namespaces", "List", {});
    return res.namespaces.map((n) => n.name);
  }

  async createNamespace(name: string): Promise<void> {
    await this.unary("namespaces.v1.Namespaces", "Create", { namespace: { name } });
  }

  // containers
  async createContainer(c: Omit<Container, "created_at" | "updated_at">): Promise<Container> {
    return (await this.unary<{ container: Container }>("containers.v1.Containers", "Create", { container: c }))
      .container;
  }

  async getContainer(id: string): Promise<Container> {
    return (await this.unary<{ container: Container }>("containers.v1.Containers", "Get", { id })).container;
  }

  async listContainers(...filters: string[]): Promise<Container[]> {
    return (await this.unary<{ containers: Container[] }>("containers.v1.Containers", "List", { filters })).containers;
  }

  async deleteContainer(id: string): Promise<void> {
    await this.unary("containers.v1.Containers", "Delete", { id });
  }

  // tasks
  async createTask(req: { container_id: string; stdout?: string; stderr?: string; rootfs?: Mount[] }): Promise<number> {
    return (await this.unary<{ pid: number }>("tasks.v1.Tasks", "Create", req)).pid;
  }

  async startTask(containerId: string): Promise<number> {
    return (await this.unary<{ pid: number }>("tasks.v1.Tasks", "Start", { container_id: containerId })).pid;
  }

  async deleteTask(containerId: string): Promise<{ exit_status: number }> {
    return this.unary("tasks.v1.Tasks", "Delete", { container_id: containerId });
  }

  async getTask(containerId: string): Promise<Process> {
    return (await this.unary<{ process: Process }>("tasks.v1.Tasks", "Get", { container_id: containerId })).process;
  }

  async listTasks(): Promise<Process[]> {
    return (await this.unary<{ tasks: Process[] }>("tasks.v1.Tasks", "List", {})).tasks;
  }

  async killTask(containerId: string, signal: number, all = false): Promise<void> {
    await this.unary("tasks.v1.Tasks", "Kill", { container_id: containerId, signal, all });
  }

  /** Resolves with the exit status once the task exits (the call stays open until then). */
  async waitTask(containerId: string, signal?: AbortSignal): Promise<number> {
    const s = this.stub("tasks.v1.Tasks");
    return new Promise((resolve, reject) => {
      const call = (s.Wait as Unary).call(s, { container_id: containerId }, this.metadata(), (err, res) => {
        signal?.removeEventListener("abort", cancel);
        // As in unary(): the declared WaitResponse.
        if (err) reject(containerdError("Tasks.Wait", err));
        else resolve((res as { exit_status: number }).exit_status);
      });
      const cancel = () => call.cancel();
      signal?.addEventListener("abort", cancel, { once: true });
    });
  }

  async taskMetrics(containerId: string): Promise<{ type_url: string; value: Buffer } | undefined> {
    const res = await this.unary<{ metrics: { id: string; data?: { type_url: string; value: Buffer } }[] }>(
      "tasks.v1.Tasks",
      "Metrics",
      { filters: [`id==${containerId}`] },
    );
    return res.metrics.find((m) => m.id === containerId)?.data;
  }

  // images
  async listImages(...filters: string[]): Promise<Image[]> {
    return (await this.unary<{ images: Image[] }>("images.v1.Images", "List", { filters })).images;
  }

  async getImage(name: string): Promise<Image> {
    return (await this.unary<{ image: Image }>("images.v1.Images", "Get", { name })).image;
  }

  /** Creates the image, or points an existing one of that name at `target`. */
  async putImage(name: string, target: Descriptor, labels: Record<string, string> = {}): Promise<Image> {
    try {
      return (await this.unary<{ image: Image }>("images.v1.Images", "Create", { image: { name, target, labels } }))
        .image;
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) throw err;
      return (
        await this.unary<{ image: Image }>("images.v1.Images", "Update", {
          image: { name, target, labels },
          update_mask: { paths: ["target", "labels"] },
        })
      ).image;
    }
  }

  async deleteImage(name: string): Promise<void> {
    await this.unary("images.v1.Images", "Delete", { name, sync: true });
  }

  // content
  async contentInfo(digest: string): Promise<ContentInfo> {
    return (await this.unary<{ info: ContentInfo }>("content.v1.Content", "Info", { digest })).info;
  }

  async hasContent(digest: string): Promise<boolean> {
    return this.contentInfo(digest).then(
      () => true,
      (err: unknown) => {
        if (err instanceof NotFoundError) return false;
        throw err;
      },
    );
  }

  async readContent(digest: string): Promise<Buffer> {
    const chunks: Buffer[] = [];
    const stream = this.serverStream<{ offset: number; data: Buffer }>("content.v1.Content", "Read", {
      digest,
      offset: 0,
      size: 0,
    });
    await new Promise<void>((resolve, reject) => {
      stream.on("data", (m) => chunks.push(m.data));
      stream.on("error", (err: grpc.ServiceError) => reject(containerdError("Content.Read", err)));
      stream.on("end", () => resolve());
    });
    return Buffer.concat(chunks);
  }

  /**
   * Writes a blob whose digest is known (`expected`), committing it with `labels`; a blob already
   * present is left as it is. `data` yields its bytes in order.
   */
  async writeContent(
    expected: string,
    total: number,
    data: AsyncIterable<Buffer> | Buffer[],
    labels: Record<string, string> = {},
  ): Promise<void> {
    if (await this.hasContent(expected)) return;
    const s = this.stub("content.v1.Content");
    const call = (s.Write as Bidi).call(s, this.metadata());
    const ref = `basalt-${expected}`;
    const done = new Promise<void>((resolve, reject) => {
      call.on("data", () => undefined);
      call.on("error", (err: grpc.ServiceError) => {
        if (err.code === grpc.status.ALREADY_EXISTS) resolve();
        else reject(containerdError("Content.Write", err));
      });
      call.on("end", () => resolve());
    });
    done.catch(() => undefined);
    // A call that fails or ends while a write waits for room never drains: the wait ends with it.
    const ended = done.then(() => true);
    ended.catch(() => undefined);
    /** Writes one message; false once the call has ended (containerd already has the content). */
    const send = async (m: object): Promise<boolean> => {
      if (call.write(m)) return true;
      let onDrain = () => undefined as void;
      const drained = new Promise<false>((resolve) => call.once("drain", (onDrain = () => resolve(false))));
      try {
        return !(await Promise.race([drained, ended]));
      } finally {
        call.off("drain", onDrain);
      }
    };
    let offset = 0;
    let open = true;
    try {
      sending: for await (const chunk of data) {
        for (let i = 0; i < chunk.length; i += 1 << 20) {
          const part = chunk.subarray(i, i + (1 << 20));
          open = await send({ action: 1, ref, total, expected, offset, data: part });
          if (!open) break sending;
          offset += part.length;
        }
      }
      if (open) await send({ action: 2, ref, total, expected, offset, labels });
    } finally {
      call.end();
    }
    await done;
  }

  // leases
  async createLease(id: string, expiresInSeconds: number): Promise<void> {
    await this.unary("leases.v1.Leases", "Create", {
      id,
      labels: { "containerd.io/gc.expire": new Date(Date.now() + expiresInSeconds * 1000).toISOString() },
    });
  }

  async deleteLease(id: string): Promise<void> {
    await this.unary("leases.v1.Leases", "Delete", { id, sync: false });
  }

  // snapshots
  async prepareSnapshot(
    snapshotter: string,
    key: string,
    parent: string,
    labels: Record<string, string> = {},
  ): Promise<Mount[]> {
    return (
      await this.unary<{ mounts: Mount[] }>("snapshots.v1.Snapshots", "Prepare", { snapshotter, key, parent, labels })
    ).mounts;
  }

  async commitSnapshot(
    snapshotter: string,
    name: string,
    key: string,
    labels: Record<string, string> = {},
  ): Promise<void> {
    await this.unary("snapshots.v1.Snapshots", "Commit", { snapshotter, name, key, labels });
  }

  async removeSnapshot(snapshotter: string, key: string): Promise<void> {
    await this.unary("snapshots.v1.Snapshots", "Remove", { snapshotter, key });
  }

  async hasSnapshot(snapshotter: string, key: string): Promise<boolean> {
    return this.unary("snapshots.v1.Snapshots", "Stat", { snapshotter, key }).then(
      () => true,
      (err: unknown) => {
        if (err instanceof NotFoundError) return false;
        throw err;
      },
    );
  }

  // diff
  async applyDiff(diff: Descriptor, mounts: Mount[]): Promise<Descriptor> {
    return (await this.unary<{ applied: Descriptor }>("diff.v1.Diff", "Apply", { diff, mounts })).applied;
  }

  // events
  /** Streams events matching `filters` (containerd's filter syntax) until `signal` aborts. */
  subscribe(filters: string[], onEvent: (e: Envelope) => void, signal: AbortSignal): Promise<void> {
    const stream = this.serverStream<Envelope>("events.v1.Events", "Subscribe", { filters });
    const cancel = () => stream.cancel();
    signal.addEventListener("abort", cancel, { once: true });
    return new Promise((resolve, reject) => {
      stream.on("data", onEvent);
      stream.on("error", (err: grpc.ServiceError) => {
        signal.removeEventListener("abort", cancel);
        if (signal.aborted) resolve();
        else reject(containerdError("Events.Subscribe", err));
      });
      stream.on("end", () => resolve());
    });
  }
}
