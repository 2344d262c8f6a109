import * as grpc from "@grpc/grpc-js";
import { InvalidInputError } from "../errors.js";
import { serviceDefinition } from "../api/index.js";
import { roleKey } from "../grpc/metadata.js";
import { MAX_MESSAGE_BYTES } from "../grpc/limits.js";
import { type ClientCredentials, tlsTarget, withPort } from "../grpc/tls-target.js";
import type { TalosContext } from "./talosconfig.js";

export { type ClientCredentials, ipEndpointServerName, tlsTarget, withPort } from "../grpc/tls-target.js";

/**
 * machined's own socket (`unix:<path>`), as apid reaches it: no TLS, and the roles
 * travel as apid asserts them. For comparing a reply through apid with its source.
 */
export interface SocketCredentials {
  kind: "socket";
  roles: string[];
}

export interface ClientOptions {
  endpoint: string; // host or host:port (port 50000 is added when missing), or unix:<path> with socket credentials
  credentials: ClientCredentials | SocketCredentials;
  /** `nodes` metadata for one-to-many proxying (talosctl -n). */
  nodes?: string[];
  /** `node` metadata for one-to-one proxying (COSI calls, trackers). */
  node?: string;
}

// grpc-js generic clients index methods by name; the typed wrappers below give them shapes.
// biome-ignore lint/suspicious/noExplicitAny: generic client methods are untyped by construction
type Untyped = any;

/** A typed client for the Talos-v1.7-compatible API, for our tests, benchmarks and users. */
export class NodeClient {
  readonly machine: Untyped;
  readonly storage: Untyped;
  readonly cosi: Untyped;
  readonly time: Untyped;
  readonly inspect: Untyped;
  readonly cluster: Untyped;
  private readonly clients: grpc.Client[] = [];

  constructor(private readonly opts: ClientOptions) {
    const c = opts.credentials;
    const address = c.kind === "socket" ? opts.endpoint : withPort(opts.endpoint);
    const tlsOpts =
      c.kind === "socket" ? { creds: grpc.credentials.createInsecure(), options: {} } : tlsTarget(address, c);
    const creds = tlsOpts.creds;
    const options: grpc.ChannelOptions = { ...tlsOpts.options, "grpc.max_receive_message_length": MAX_MESSAGE_BYTES };
    const make = (service: string) => {
      const Ctor = grpc.makeGenericClientConstructor(serviceDefinition(service), service);
      const c = new Ctor(address, creds, options);
      this.clients.push(c);
      return c as Untyped;
    };
    this.machine = make("machine.MachineService");
    this.storage = make("storage.StorageService");
    this.cosi = make("cosi.resource.State");
    this.time = make("time.TimeService");
    this.inspect = make("inspect.InspectService");
    this.cluster = make("cluster.ClusterService");
  }

  metadata(): grpc.Metadata {
    const md = new grpc.Metadata();
    if (this.opts.nodes?.length) md.set("nodes", this.opts.nodes.join(","));
    if (this.opts.node) md.set("node", this.opts.node);
    if (this.opts.credentials.kind === "socket") for (const r of this.opts.credentials.roles) md.add(roleKey, r);
    return md;
  }

  /** Calls a unary method and resolves with the plain-object reply. */
  unary<Res = Record<string, unknown>>(
    client: Untyped,
    method: string,
    request: object = {},
    deadlineMs = 30_000,
  ): Promise<Res> {
    return new Promise((resolve, reject) => {
      client[method](
        request,
        this.metadata(),
        { deadline: Date.now() + deadlineMs },
        (err: grpc.ServiceError | null, res: Res) => (err ? reject(err) : resolve(res)),
      );
    });
  }

  /** Collects every message of a server stream. */
  collect<Res = Record<string, unknown>>(
    client: Untyped,
    method: string,
    request: object = {},
    deadlineMs = 30_000,
  ): Promise<Res[]> {
    return new Promise((resolve, reject) => {
      const out: Res[] = [];
      const stream: grpc.ClientReadableStream<Res> = client[method](request, this.metadata(), {
        deadline: Date.now() + deadlineMs,
      });
      stream.on("data", (m: Res) => out.push(m));
      stream.on("error", reject);
      stream.on("end", () => resolve(out));
    });
  }

  /** Sends `chunks` as the `bytes` of a client stream (talosctl's uploads: EtcdRecover) and resolves with the reply. */
  upload<Res = Record<string, unknown>>(
    client: Untyped,
    method: string,
    chunks: Buffer[],
    deadlineMs = 60_000,
  ): Promise<Res> {
    return new Promise((resolve, reject) => {
      const call: grpc.ClientWritableStream<{ bytes: Buffer }> = client[method](
        this.metadata(),
        { deadline: Date.now() + deadlineMs },
        (err: grpc.ServiceError | null, res: Res) => (err ? reject(err) : resolve(res)),
      );
      for (const bytes of chunks) call.write({ bytes });
      call.end();
    });
  }

  /** Reads a server stream until `until` matches a message (that message included), then cancels it. */
  collectUntil<Res = Record<string, unknown>>(
    client: Untyped,
    method: string,
    request: object,
    until: (m: Res) => boolean,
    deadlineMs = 30_000,
  ): Promise<Res[]> {
    return new Promise((resolve, reject) => {
      const out: Res[] = [];
      const stream: grpc.ClientReadableStream<Res> = client[method](request, this.metadata(), {
        deadline: Date.now() + deadlineMs,
      });
      stream.on("data", (m: Res) => {
        out.push(m);
        if (until(m)) {
          stream.cancel();
          resolve(out);
        }
      });
      stream.on("error", (err) =>
        (err as grpc.ServiceError).code === grpc.status.CANCELLED ? undefined : reject(err),
      );
      stream.on("end", () => resolve(out));
    });
  }

  version() {
    return this.unary(this.machine, "Version");
  }
  serviceList() {
    return this.unary(this.machine, "ServiceList");
  }
  disks() {
    return this.unary(this.storage, "Disks");
  }
  applyConfiguration(data: Uint8Array | string, opts: { mode?: number; dryRun?: boolean } = {}) {
    return this.unary(this.machine, "ApplyConfiguration", {
      data: Buffer.from(data),
      mode: opts.mode ?? 1,
      dry_run: opts.dryRun ?? false,
    });
  }
  resourceGet(namespace: string, type: string, id: string) {
    return this.unary(this.cosi, "Get", { namespace, type, id });
  }
  resourceList(namespace: string, type: string) {
    return this.collect(this.cosi, "List", { namespace, type });
  }
  /** Reboot; mode 1 (POWERCYCLE) goes through the firmware instead of a kexec. */
  reboot(mode = 0) {
    return this.unary(this.machine, "Reboot", { mode });
  }
  shutdown(force = false) {
    return this.unary(this.machine, "Shutdown", { force });
  }
  /** Reset; `wipe` names system partitions (STATE, EPHEMERAL), none for the whole system disk. */
  reset(opts: { wipe?: string[]; reboot?: boolean; graceful?: boolean } = {}) {
    return this.unary(this.machine, "Reset", {
      graceful: opts.graceful ?? true,
      reboot: opts.reboot ?? false,
      system_partitions_to_wipe: (opts.wipe ?? []).map((label) => ({ label, wipe: true })),
    });
  }
  mounts() {
    return this.unary(this.machine, "Mounts");
  }
  /** A file's bytes from the node (talosctl read). */
  async read(path: string): Promise<Buffer> {
    const chunks = await this.collect<{ bytes?: Buffer }>(this.machine, "Read", { path });
    return Buffer.concat(chunks.map((c) => c.bytes ?? Buffer.alloc(0)));
  }
  generateConfiguration(request: object) {
    return this.unary(this.machine, "GenerateConfiguration", request);
  }
  /** A directory listing (talosctl ls): one machine.FileInfo per entry. */
  list(request: { root: string; recurse?: boolean; recursion_depth?: number; types?: number[] }) {
    return this.collect(this.machine, "List", request);
  }
  /** A talosconfig (and its parts) for `roles`, valid for `crtTtlSeconds` (talosctl config new). */
  generateClientConfiguration(roles: string[], crtTtlSeconds: number) {
    return this.unary<{ messages: { ca: Buffer; crt: Buffer; key: Buffer; talosconfig: Buffer }[] }>(
      this.machine,
      "GenerateClientConfiguration",
      {
        roles,
        crt_ttl: { seconds: crtTtlSeconds },
      },
    );
  }
  /** The admin kubeconfig as the node sends it: a tar.gz holding the file `kubeconfig` (talosctl kubeconfig). */
  async kubeconfig(): Promise<Buffer> {
    const chunks = await this.collect<{ bytes?: Buffer }>(this.machine, "Kubeconfig", {});
    return Buffer.concat(chunks.map((c) => c.bytes ?? Buffer.alloc(0)));
  }

  close(): void {
    for (const c of this.clients) c.close();
  }
}

/** ApplyConfigurationRequest.Mode values, re-exported for SDK users. */
export { ApplyMode } from "../api/enums.js";

/** A client for the first endpoint of a talosconfig context, with its mTLS material (talosctl's default). */
export function clientFromContext(
  ctx: TalosContext,
  opts: { endpoint?: string; nodes?: string[]; node?: string } = {},
): NodeClient {
  const endpoint = opts.endpoint ?? ctx.endpoints[0];
  if (!endpoint) throw new InvalidInputError(`context ${ctx.name} has no endpoints`);
  return new NodeClient({
    endpoint,
    credentials: { kind: "mtls", ca: ctx.ca, crt: ctx.crt, key: ctx.key },
    ...(opts.nodes ? { nodes: opts.nodes } : {}),
    ...(opts.node ? { node: opts.node } : {}),
  });
}
