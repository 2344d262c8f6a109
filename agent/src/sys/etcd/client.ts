// A client of etcd's v3 gRPC API over mutual TLS (Talos's machined uses the admin certificate):
// the KV, Watch, Lease, Cluster and Maintenance calls machined makes, answering with plain objects whose 64-bit
// IDs are bigints. One endpoint per client, as Talos dials its local member; `firstAnswering`
// walks a list of endpoints for the calls Talos makes against the whole control plane.
import * as grpc from "@grpc/grpc-js";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { BasaltError, ConflictError, InvalidInputError, NotFoundError, SystemError } from "../../errors.js";
import { etcdService } from "./protos.js";

/** The PEM material a client presents and trusts. */
export interface EtcdTls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/** Reads Talos's admin client credentials from an etcd PKI directory (ca.crt, admin.crt, admin.key). */
export async function adminTls(pkiDir: string): Promise<EtcdTls> {
  const [ca, cert, key] = await Promise.all(
    ["ca.crt", "admin.crt", "admin.key"].map((f) => readFile(path.join(pkiDir, f))),
  );
  return { ca: ca!, cert: cert!, key: key! };
}

/** etcd answered a call with an error status; `details` is etcd's text (e.g. `etcdserver: member not found`). */
export interface EtcdStatusFields {
  call: string;
  code: grpc.status;
  details: string;
}

type Ctor = new (message: string, fields?: Record<string, unknown>, options?: { cause?: unknown }) => BasaltError;
const byCode: Partial<Record<grpc.status, Ctor>> = {
  [grpc.status.NOT_FOUND]: NotFoundError,
  [grpc.status.INVALID_ARGUMENT]: InvalidInputError,
  [grpc.status.FAILED_PRECONDITION]: ConflictError,
};

/** etcd's error texts callers act on (go.etcd.io/etcd/api/v3/v3rpc/rpctypes). */
export const etcdErrors = {
  memberNotFound: "etcdserver: member not found",
  notLeader: "etcdserver: not leader",
  unhealthy: "etcdserver: unhealthy cluster",
  stopped: "etcdserver: server stopped",
  permissionDenied: "etcdserver: permission denied",
} as const;

/** Whether `err` is etcd's answer `text` (one of etcdErrors). */
export function isEtcdError(err: unknown, text: string): boolean {
  return err instanceof BasaltError && err.fields.details === text;
}

function etcdError(call: string, err: grpc.ServiceError): BasaltError {
  const Err = byCode[err.code] ?? SystemError;
  const fields: EtcdStatusFields = { call, code: err.code, details: err.details };
  // etcd's text is the whole story (the gRPC error would only repeat it); its code stays in the fields.
  return new Err(err.details || err.message, { ...fields });
}

export interface ResponseHeader {
  clusterId: bigint;
  memberId: bigint;
  revision: bigint;
  raftTerm: bigint;
}

export interface EtcdMemberInfo {
  id: bigint;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

export interface EtcdStatusInfo {
  header: ResponseHeader;
  version: string;
  dbSize: bigint;
  leader: bigint;
  raftIndex: bigint;
  raftTerm: bigint;
  raftAppliedIndex: bigint;
  errors: string[];
  dbSizeInUse: bigint;
  isLearner: boolean;
}

/** etcdserverpb.AlarmType numbers. */
export type AlarmType = 0 | 1 | 2;
export interface AlarmMember {
  memberId: bigint;
  alarm: AlarmType;
}

// Wire shapes (protos.ts: 64-bit integers as decimal strings).
interface WireHeader {
  cluster_id: string;
  member_id: string;
  revision: string;
  raft_term: string;
}
interface WireMember {
  ID: string;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

const header = (h: WireHeader | null | undefined): ResponseHeader => ({
  clusterId: BigInt(h?.cluster_id ?? 0),
  memberId: BigInt(h?.member_id ?? 0),
  revision: BigInt(h?.revision ?? 0),
  raftTerm: BigInt(h?.raft_term ?? 0),
});
const member = (m: WireMember): EtcdMemberInfo => ({
  id: BigInt(m.ID),
  name: m.name,
  peerURLs: m.peerURLs,
  clientURLs: m.clientURLs,
  isLearner: m.isLearner,
});

/** A stored key (mvccpb.KeyValue); revisions and the lease as bigints. */
export interface EtcdKeyValue {
  key: string;
  value: Buffer;
  createRevision: bigint;
  modRevision: bigint;
  lease: bigint;
}
interface WireKeyValue {
  key: Buffer;
  value: Buffer;
  create_revision: string;
  mod_revision: string;
  lease: string;
}
const keyValue = (kv: WireKeyValue): EtcdKeyValue => ({
  key: kv.key.toString(),
  value: kv.value,
  createRevision: BigInt(kv.create_revision),
  modRevision: BigInt(kv.mod_revision),
  lease: BigInt(kv.lease),
});

/**
 * The end of the range holding every key that starts with `prefix` (clientv3.GetPrefixRangeEnd):
 * its last byte incremented (UTF-8 never holds 0xff, so no byte carries); the empty prefix ranges
 * to the end of the keyspace ("\0").
 */
export function prefixRangeEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  if (end.length === 0) return Buffer.from([0]);
  end[end.length - 1]! += 1;
  return end;
}

/** A read of the keys under a prefix, in create-revision order (clientv3.WithFirstCreate / WithLastCreate). */
export interface PrefixQuery {
  prefix: string;
  order: "firstCreated" | "lastCreated";
  /** Only keys created at or before this revision (clientv3.WithMaxCreateRev). */
  maxCreateRevision?: bigint;
}

/** RangeRequest fields of a PrefixQuery, limited to one key. */
function prefixRange(q: PrefixQuery): object {
  return {
    key: Buffer.from(q.prefix),
    range_end: prefixRangeEnd(q.prefix),
    limit: 1,
    sort_target: 2, // CREATE
    sort_order: q.order === "firstCreated" ? 1 : 2, // ASCEND : DESCEND
    ...(q.maxCreateRevision !== undefined ? { max_create_revision: q.maxCreateRevision.toString() } : {}),
  };
}

/**
 * A transaction "create `key` with `lease` unless it exists, then read the first created key
 * under `prefix`" (the one round trip of concurrency.Mutex's tryAcquire).
 */
export interface CreateIfMissingResult {
  header: ResponseHeader;
  /** Whether this call created the key (otherwise it existed). */
  created: boolean;
  /** The key as it is stored now (absent when just created: its revision is the header's). */
  existing: EtcdKeyValue | undefined;
  /** The first created key under the prefix. */
  first: EtcdKeyValue | undefined;
}

/** A lease kept alive until stopped. */
export interface LeaseKeepAlive {
  stop(): void;
}

type Unary = (
  req: object,
  md: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res: unknown) => void,
) => grpc.ClientUnaryCall;
type Duplex = (md: grpc.Metadata, opts: grpc.CallOptions) => grpc.ClientDuplexStream<object, unknown>;
type ServerStream = (req: object, md: grpc.Metadata, opts: grpc.CallOptions) => grpc.ClientReadableStream<unknown>;
type Stub = Record<string, unknown>;

export interface EtcdClientOptions {
  /** Each unary call's deadline (Talos: the API call's own context; etcd's quorum check 15 s). */
  callTimeoutMs?: number;
  /** Refuse calls while the member has no leader (clientv3.WithRequireLeader). */
  requireLeader?: boolean;
}

/** `host:port` of an etcd URL (`https://10.0.0.1:2379`), or the endpoint as given. */
export function endpointOf(urlOrEndpoint: string): string {
  if (!urlOrEndpoint.includes("://")) return urlOrEndpoint;
  return new URL(urlOrEndpoint).host;
}

export class EtcdClient {
  private readonly channel: grpc.Channel;
  private readonly stubs = new Map<string, Stub>();

  constructor(
    readonly endpoint: string,
    tls: EtcdTls,
    private readonly opts: EtcdClientOptions = {},
  ) {
    this.channel = new grpc.Channel(endpointOf(endpoint), grpc.credentials.createSsl(tls.ca, tls.key, tls.cert), {
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
    });
  }

  close(): void {
    this.channel.close();
    this.stubs.clear();
  }

  private stub(service: string): Stub {
    let s = this.stubs.get(service);
    if (!s) {
      const Ctor = grpc.makeGenericClientConstructor(etcdService(service), service);
      // The generic constructor's instances carry one method per RPC; Stub names that shape.
      s = new Ctor(this.endpoint, grpc.credentials.createInsecure(), {
        channelOverride: this.channel,
      }) as unknown as Stub;
      this.stubs.set(service, s);
    }
    return s;
  }

  private metadata(): grpc.Metadata {
    const md = new grpc.Metadata();
    if (this.opts.requireLeader) md.set("hasleader", "true");
    return md;
  }

  private unary<T>(service: string, method: string, req: object): Promise<T> {
    const s = this.stub(service);
    const fn = s[method] as Unary;
    const deadline = new Date(Date.now() + (this.opts.callTimeoutMs ?? 30_000));
    return new Promise((resolve, reject) => {
      fn.call(s, req, this.metadata(), { deadline }, (err, res) => {
        // The response is the decoded message of agent/etcd-api declared for this method; T names it.
        if (err) reject(etcdError(`${service}.${method}`, err));
        else resolve(res as T);
      });
    });
  }

  async get(key: string): Promise<{ header: ResponseHeader; value: Buffer | undefined }> {
    const res = await this.unary<{ header: WireHeader; kvs: { value: Buffer }[] }>("KV", "Range", {
      key: Buffer.from(key),
    });
    return { header: header(res.header), value: res.kvs[0]?.value };
  }

  async put(key: string, value: Buffer | string): Promise<ResponseHeader> {
    const res = await this.unary<{ header: WireHeader }>("KV", "Put", {
      key: Buffer.from(key),
      value: Buffer.from(value),
    });
    return header(res.header);
  }

  /** Deletes `key`; returns how many keys were deleted (0 or 1). */
  async delete(key: string): Promise<bigint> {
    const res = await this.unary<{ deleted: string }>("KV", "DeleteRange", { key: Buffer.from(key) });
    return BigInt(res.deleted);
  }

  /** The first or last created key under a prefix (with the response header: its revision). */
  async firstOrLastCreated(q: PrefixQuery): Promise<{ header: ResponseHeader; kv: EtcdKeyValue | undefined }> {
    const res = await this.unary<{ header: WireHeader; kvs: WireKeyValue[] }>("KV", "Range", prefixRange(q));
    return { header: header(res.header), kv: res.kvs[0] && keyValue(res.kvs[0]) };
  }

  /** The stored key `key`, or undefined. */
  async getKeyValue(key: string): Promise<{ header: ResponseHeader; kv: EtcdKeyValue | undefined }> {
    const res = await this.unary<{ header: WireHeader; kvs: WireKeyValue[] }>("KV", "Range", { key: Buffer.from(key) });
    return { header: header(res.header), kv: res.kvs[0] && keyValue(res.kvs[0]) };
  }

  /** One transaction: if `key` was never created, put it (empty, with `lease`); either way read it and the prefix's first key. */
  async createIfMissing(key: string, lease: bigint, prefix: string): Promise<CreateIfMissingResult> {
    const firstUnder = { request_range: prefixRange({ prefix, order: "firstCreated" }) };
    type WireOp = { response_range?: { kvs: WireKeyValue[] } };
    const res = await this.unary<{ header: WireHeader; succeeded: boolean; responses: WireOp[] }>("KV", "Txn", {
      compare: [{ result: 0, target: 1, key: Buffer.from(key), create_revision: "0" }], // CREATE(key) == 0
      success: [
        { request_put: { key: Buffer.from(key), value: Buffer.alloc(0), lease: lease.toString() } },
        firstUnder,
      ],
      failure: [{ request_range: { key: Buffer.from(key) } }, firstUnder],
    });
    const existing = res.succeeded ? undefined : res.responses[0]?.response_range?.kvs[0];
    const first = res.responses[1]?.response_range?.kvs[0];
    return {
      header: header(res.header),
      created: res.succeeded,
      existing: existing && keyValue(existing),
      first: first && keyValue(first),
    };
  }

  /** Grants a lease of `ttlSeconds`; returns its ID. */
  async leaseGrant(ttlSeconds: number): Promise<bigint> {
    const res = await this.unary<{ ID: string; error: string }>("Lease", "LeaseGrant", { TTL: ttlSeconds });
    if (res.error)
      throw new SystemError(`etcd refused a lease: ${res.error}`, { call: "Lease.LeaseGrant", ttlSeconds });
    return BigInt(res.ID);
  }

  /** Revokes lease `id`: every key attached to it is deleted. */
  async leaseRevoke(id: bigint): Promise<void> {
    await this.unary("Lease", "LeaseRevoke", { ID: id.toString() });
  }

  /**
   * Refreshes lease `id` every `intervalMs` (clientv3 sends at a third of the TTL) over one
   * LeaseKeepAlive stream, reopened on the next tick when it breaks; stops once etcd answers
   * TTL 0 (the lease is gone: whoever holds it finds its keys gone).
   */
  keepAlive(id: bigint, intervalMs: number): LeaseKeepAlive {
    const s = this.stub("Lease");
    let call: grpc.ClientDuplexStream<object, unknown> | undefined;
    const open = () => {
      const c = (s.LeaseKeepAlive as Duplex).call(s, this.metadata(), {});
      c.on("data", (msg: { TTL: string }) => {
        if (BigInt(msg.TTL) <= 0n) stop();
      });
      // A broken stream is reopened at the next refresh; the lease outlives it by its TTL.
      c.on("error", () => {
        if (call === c) call = undefined;
      });
      return c;
    };
    const refresh = () => {
      call ??= open();
      call.write({ ID: id.toString() });
    };
    const timer = setInterval(refresh, intervalMs);
    const stop = () => {
      clearInterval(timer);
      call?.cancel();
      call = undefined;
    };
    refresh();
    return { stop };
  }

  /**
   * Resolves once `key` is deleted at or after `revision` (a Watch from that revision: a deletion
   * that already happened is seen too); rejects when the watch is cancelled or `signal` aborts.
   */
  waitDelete(key: string, revision: bigint, signal?: AbortSignal): Promise<void> {
    const s = this.stub("Watch");
    const call = (s.Watch as Duplex).call(s, this.metadata(), {});
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const done = (err?: unknown) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener("abort", abort);
        call.removeAllListeners("data");
        call.on("error", () => undefined); // the cancel below ends the stream with CANCELLED
        call.cancel();
        if (err) reject(err);
        else resolve();
      };
      const abort = () => done(signal?.reason ?? new SystemError("watch aborted", { call: "Watch.Watch", key }));
      if (signal?.aborted) return abort();
      signal?.addEventListener("abort", abort, { once: true });
      call.on("data", (msg: { canceled: boolean; cancel_reason: string; events: { type: number }[] }) => {
        if (msg.events.some((e) => e.type === 1))
          done(); // DELETE
        else if (msg.canceled)
          done(
            new SystemError(`etcd cancelled the watch of ${key}: ${msg.cancel_reason}`, { call: "Watch.Watch", key }),
          );
      });
      call.on("error", (err: grpc.ServiceError) => done(etcdError("Watch.Watch", err)));
      call.on("end", () => done(new SystemError(`etcd ended the watch of ${key}`, { call: "Watch.Watch", key })));
      call.write({ create_request: { key: Buffer.from(key), start_revision: revision.toString() } });
    });
  }

  async memberList(): Promise<{ header: ResponseHeader; members: EtcdMemberInfo[] }> {
    const res = await this.unary<{ header: WireHeader; members: WireMember[] }>("Cluster", "MemberList", {
      linearizable: true,
    });
    return { header: header(res.header), members: res.members.map(member) };
  }

  async memberAdd(
    peerURLs: string[],
    isLearner: boolean,
  ): Promise<{ member: EtcdMemberInfo; members: EtcdMemberInfo[] }> {
    const res = await this.unary<{ member: WireMember; members: WireMember[] }>("Cluster", "MemberAdd", {
      peerURLs,
      isLearner,
    });
    return { member: member(res.member), members: res.members.map(member) };
  }

  async memberRemove(id: bigint): Promise<EtcdMemberInfo[]> {
    const res = await this.unary<{ members: WireMember[] }>("Cluster", "MemberRemove", { ID: id.toString() });
    return res.members.map(member);
  }

  /** Replaces member `id`'s peer URLs. */
  async memberUpdate(id: bigint, peerURLs: string[]): Promise<EtcdMemberInfo[]> {
    const res = await this.unary<{ members: WireMember[] }>("Cluster", "MemberUpdate", { ID: id.toString(), peerURLs });
    return res.members.map(member);
  }

  async memberPromote(id: bigint): Promise<EtcdMemberInfo[]> {
    const res = await this.unary<{ members: WireMember[] }>("Cluster", "MemberPromote", { ID: id.toString() });
    return res.members.map(member);
  }

  async status(): Promise<EtcdStatusInfo> {
    const r = await this.unary<Record<string, string | string[] | boolean> & { header: WireHeader }>(
      "Maintenance",
      "Status",
      {},
    );
    const n = (k: string) => BigInt(r[k] as string);
    return {
      header: header(r.header),
      version: r.version as string,
      dbSize: n("dbSize"),
      leader: n("leader"),
      raftIndex: n("raftIndex"),
      raftTerm: n("raftTerm"),
      raftAppliedIndex: n("raftAppliedIndex"),
      errors: r.errors as string[],
      dbSizeInUse: n("dbSizeInUse"),
      isLearner: r.isLearner as boolean,
    };
  }

  private async alarm(
    action: 0 | 2,
    req: { memberID?: bigint; alarm?: AlarmType } = {},
  ): Promise<{ header: ResponseHeader; alarms: AlarmMember[] }> {
    const res = await this.unary<{ header: WireHeader; alarms: { memberID: string; alarm: AlarmType }[] }>(
      "Maintenance",
      "Alarm",
      {
        action,
        memberID: (req.memberID ?? 0n).toString(),
        alarm: req.alarm ?? 0,
      },
    );
    return {
      header: header(res.header),
      alarms: res.alarms.map((a) => ({ memberId: BigInt(a.memberID), alarm: a.alarm })),
    };
  }

  /** AlarmRequest GET: every active alarm of the cluster. */
  alarmList(): Promise<{ header: ResponseHeader; alarms: AlarmMember[] }> {
    return this.alarm(0);
  }

  /** AlarmRequest DEACTIVATE of `alarm` (0 NONE with member 0: what clientv3.AlarmDisarm(&AlarmMember{}) sends). */
  alarmDisarm(
    alarm: AlarmMember = { memberId: 0n, alarm: 0 },
  ): Promise<{ header: ResponseHeader; alarms: AlarmMember[] }> {
    return this.alarm(2, { memberID: alarm.memberId, alarm: alarm.alarm });
  }

  /** The ID of the member answering (Talos reads it from an AlarmList header). */
  async memberId(): Promise<bigint> {
    return (await this.alarmList()).header.memberId;
  }

  async defragment(): Promise<void> {
    await this.unary("Maintenance", "Defragment", {});
  }

  async moveLeader(targetId: bigint): Promise<void> {
    await this.unary("Maintenance", "MoveLeader", { targetID: targetId.toString() });
  }

  /** The member's backend database, streamed in etcd's chunks; the stream ends when `signal` aborts. */
  async *snapshot(signal?: AbortSignal): AsyncGenerator<Buffer> {
    const s = this.stub("Maintenance");
    const call = (s.Snapshot as ServerStream).call(s, {}, this.metadata(), {});
    const abort = () => call.cancel();
    signal?.addEventListener("abort", abort, { once: true });
    try {
      for await (const msg of call) yield (msg as { blob: Buffer }).blob;
    } catch (err) {
      throw typeof (err as grpc.ServiceError).code === "number"
        ? etcdError("Maintenance.Snapshot", err as grpc.ServiceError)
        : err;
    } finally {
      signal?.removeEventListener("abort", abort);
      call.cancel();
    }
  }

  /**
   * Talos's quorum check: a linearizable read of key `health`; any answer, even permission
   * denied (the request went through consensus), means quorum.
   */
  async validateQuorum(): Promise<void> {
    try {
      await this.get("health");
    } catch (err) {
      if (!isEtcdError(err, etcdErrors.permissionDenied)) throw err;
    }
  }
}

/**
 * Runs `fn` with a client of each endpoint in turn until one answers (a call failing as
 * unreachable moves on; etcd's own refusals end the walk), closing every client it made.
 */
export async function firstAnswering<T>(
  endpoints: readonly string[],
  tls: EtcdTls,
  opts: EtcdClientOptions,
  fn: (c: EtcdClient) => Promise<T>,
): Promise<T> {
  if (endpoints.length === 0) throw new NotFoundError("no controlplane endpoints discovered yet");
  let last: unknown;
  for (const endpoint of endpoints) {
    const client = new EtcdClient(endpoint, tls, opts);
    try {
      return await fn(client);
    } catch (err) {
      last = err;
      const code = err instanceof BasaltError ? err.fields.code : undefined;
      if (code !== grpc.status.UNAVAILABLE && code !== grpc.status.DEADLINE_EXCEEDED) throw err;
    } finally {
      client.close();
    }
  }
  throw last;
}
