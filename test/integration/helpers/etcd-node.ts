// A control-plane node's etcd on loopback, as machined wires it: the PKI our controllers issue and
// write, the etcd service under a real Supervisor running the real etcd v3.5.13 (built by
// scripts/go-component.sh, as CI builds it), the EtcdMember controller, and MachineService's etcd
// calls served over a real gRPC server and called with Talos's wire messages.
import * as grpc from "@grpc/grpc-js";
import { chmod, mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { lookupMessage, rawServiceDefinition } from "../../../agent/src/api/index.js";
import { EtcdMemberController } from "../../../agent/src/controllers/etcd/member.js";
import { writeEtcdPki } from "../../../agent/src/controllers/etcd/pki.js";
import { issueEtcdCerts } from "../../../agent/src/controllers/secrets/etcd.js";
import { addService } from "../../../agent/src/grpc/server.js";
import { bootstrapEtcd } from "../../../agent/src/machined/rpc/etcd-bootstrap.js";
import { etcdServiceImpl, type EtcdApiContext } from "../../../agent/src/machined/rpc/etcd.js";
import { generateSelfSignedCA } from "../../../agent/src/pki/index.js";
import type { MachineTypeName } from "../../../agent/src/resources/catalog/config.js";
import {
  ETCD_NAMESPACE,
  EtcdPKIStatusId,
  EtcdPKIStatusType,
  EtcdSpecId,
  EtcdSpecType,
  type EtcdRootSpec,
  type EtcdSpecSpec,
} from "../../../agent/src/resources/catalog/etcd.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import {
  NETWORK_NAMESPACE,
  networkDefinitions,
  NetworkStatusId,
  NetworkStatusType,
} from "../../../agent/src/resources/catalog/network.js";
import { RUNTIME_NAMESPACE, ServiceType, TimeStatusType } from "../../../agent/src/resources/catalog/runtime.js";
import { ControllerRuntime } from "../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { etcdService, hostProcessRunner } from "../../../agent/src/services/definitions/etcd.js";
import type { EtcdCluster } from "../../../agent/src/services/definitions/etcd-join.js";
import type { ServiceState } from "../../../agent/src/services/service.js";
import { Supervisor } from "../../../agent/src/services/supervisor.js";
import { adminTls, EtcdClient } from "../../../agent/src/sys/etcd/client.js";
import { etcdPaths, type EtcdPaths } from "../../../agent/src/sys/etcd/paths.js";
import { hostEtcdutl, type EtcdutlFactory } from "../../../agent/src/sys/etcd/restore.js";
import { pathsAt } from "../../../agent/src/sys/paths.js";
import { freePort } from "./sandbox.js";
import { goProgram } from "./go-programs.js";

/** etcd and etcdutl v3.5.13 from their Go modules (cached after the first build). */
export function etcdBinaries(): { etcd: string; etcdutl: string } {
  return { etcd: goProgram("etcd"), etcdutl: goProgram("etcdutl") };
}

/** An etcd CA as `gen config` makes it (ECDSA P-256, O=etcd). */
export async function etcdRoot(): Promise<EtcdRootSpec> {
  const ca = await generateSelfSignedCA({ algorithm: "ecdsa-p256", organizations: ["etcd"] });
  return { etcdCA: { crt: ca.certPem, key: ca.keyPem } };
}

export interface EtcdNode {
  name: string;
  root: string;
  paths: EtcdPaths;
  ports: { client: number; peer: number };
  state: ResourceState;
  supervisor: Supervisor;
  /** The etcd service of a waiting control plane (not bootstrapped). */
  startWaiting(): Promise<void>;
  /** A MachineService call over the wire; 64-bit integers in the reply as decimal strings. */
  call(method: string, req?: object): Promise<Record<string, unknown>>;
  /** A client-streaming call (EtcdRecover). */
  upload(method: string, chunks: Buffer[]): Promise<Record<string, unknown>>;
  /** A server-streaming call (EtcdSnapshot): the messages. */
  stream(method: string, req?: object): Promise<Record<string, unknown>[]>;
  /** A client of this node's member (admin certificate). */
  client(): Promise<EtcdClient>;
  /** Resolves once the etcd service is in `state` (and healthy, for Running); rejects once it Failed instead. */
  until(state: ServiceState, healthy?: boolean): Promise<void>;
  close(): Promise<void>;
}

export interface EtcdNodeOptions {
  name: string;
  root: EtcdRootSpec;
  binaries: { etcd: string; etcdutl: string };
  machineType?: MachineTypeName;
  /** The members a joining node asks (host:port); default: this node only. */
  peers?: () => string[];
  /** Where a restore runs etcdutl, given the node's paths; default: binaries.etcdutl on the host. */
  etcdutl?: (paths: EtcdPaths) => EtcdutlFactory;
}

const decodeOpts = { longs: String, enums: Number, bytes: Buffer, defaults: true };

export async function etcdNode(opts: EtcdNodeOptions): Promise<EtcdNode> {
  const root = await mkdtemp(path.join(os.tmpdir(), `etcd-${opts.name}-`));
  // etcd runs as user 60: it must reach its directories.
  await chmod(root, 0o755);
  const paths = etcdPaths(pathsAt(root));
  const ports = { client: await freePort(), peer: await freePort() };
  const certs = await issueEtcdCerts(opts.root.etcdCA, {
    addresses: ["127.0.0.1"],
    hostname: opts.name,
    dnsNames: [opts.name],
  });
  await writeEtcdPki(paths.pkiDir, opts.root, certs);
  await mkdir(path.join(root, "var", "lib"), { recursive: true, mode: 0o755 });
  for (const dir of [path.join(root, "system"), path.join(root, "system", "secrets")]) await chmod(dir, 0o755);

  const state = new ResourceState();
  registerCatalog(state, networkDefinitions);
  const owner = "test.Node";
  state.modify(RUNTIME_NAMESPACE, TimeStatusType, "node", owner, () => ({
    synced: true,
    epoch: 1,
    syncDisabled: false,
  }));
  state.modify(NETWORK_NAMESPACE, NetworkStatusType, NetworkStatusId, owner, () => ({
    addressReady: true,
    connectivityReady: true,
    hostnameReady: true,
    etcFilesReady: true,
  }));
  const spec: EtcdSpecSpec = {
    name: opts.name,
    advertisedAddresses: ["127.0.0.1"],
    listenPeerAddresses: ["127.0.0.1"],
    listenClientAddresses: ["127.0.0.1"],
    image: "gcr.io/etcd-development/etcd:v3.5.13",
    extraArgs: {},
  };
  state.modify(ETCD_NAMESPACE, EtcdSpecType, EtcdSpecId, owner, () => spec);
  state.modify(ETCD_NAMESPACE, EtcdPKIStatusType, EtcdPKIStatusId, owner, () => ({ ready: true, version: "1" }));

  const supervisor = new Supervisor({ healthIntervalMs: 300, restartIntervalMs: 1000 });
  // machined mirrors the supervisor into Service resources (controllers/runtime/service.ts).
  supervisor.onChange((s) => {
    state.modify(RUNTIME_NAMESPACE, ServiceType, s.id, owner, () => ({
      running: s.state === "Running",
      healthy: s.health.healthy,
      unknown: s.health.unknown,
    }));
  });
  const tls = () => adminTls(paths.pkiDir);
  const local = `127.0.0.1:${ports.client}`;
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 100, maxBackoffMs: 500 });
  runtime.register(
    new EtcdMemberController(async () => {
      const c = new EtcdClient(local, await tls());
      try {
        return await c.memberId();
      } finally {
        c.close();
      }
    }),
  );
  const ac = new AbortController();
  runtime.start(ac.signal);

  const machineType = () => opts.machineType ?? "controlplane";
  const cluster: EtcdCluster = {
    endpoints: async () => opts.peers?.() ?? [local],
    tls,
    addresses: () => ["127.0.0.1"],
  };
  const service = (extra: { bootstrap?: boolean; recover?: { skipHashCheck: boolean } } = {}) =>
    etcdService({
      state,
      paths,
      machineType,
      cluster,
      ports,
      dependsOn: [],
      runner: hostProcessRunner(opts.binaries.etcd),
      etcdutl: opts.etcdutl?.(paths) ?? hostEtcdutl(opts.binaries.etcdutl),
      timing: { retryMs: 300, nagMs: 60_000, timeoutMs: 120_000, promoteRetryMs: 500, promoteTimeoutMs: 120_000 },
      ...extra,
    });
  const api: EtcdApiContext = {
    machineType,
    state,
    paths,
    clientPort: ports.client,
    controlPlaneEndpoints: async () => opts.peers?.() ?? [local],
    stopEtcd: () => supervisor.stop("etcd"),
    bootstrapEtcd: (req) =>
      bootstrapEtcd(
        supervisor,
        (r) => service({ bootstrap: true, ...(r.recover ? { recover: { skipHashCheck: r.skipHashCheck } } : {}) }),
        paths.dataDir,
        req,
      ),
    leaveRetry: { intervalMs: 500, totalMs: 30_000 },
  };
  const server = new grpc.Server();
  addService(server, "machine.MachineService", etcdServiceImpl(api), () => undefined);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const Client = grpc.makeGenericClientConstructor(rawServiceDefinition("machine.MachineService"), "MachineService");
  const stub = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as Record<
    string,
    (...a: unknown[]) => unknown
  >;
  const types = (method: string): [string, string] => {
    const known: Record<string, [string, string]> = {
      Bootstrap: ["machine.BootstrapRequest", "machine.BootstrapResponse"],
      EtcdMemberList: ["machine.EtcdMemberListRequest", "machine.EtcdMemberListResponse"],
      EtcdStatus: ["google.protobuf.Empty", "machine.EtcdStatusResponse"],
      EtcdAlarmList: ["google.protobuf.Empty", "machine.EtcdAlarmListResponse"],
      EtcdAlarmDisarm: ["google.protobuf.Empty", "machine.EtcdAlarmDisarmResponse"],
      EtcdDefragment: ["google.protobuf.Empty", "machine.EtcdDefragmentResponse"],
      EtcdForfeitLeadership: ["machine.EtcdForfeitLeadershipRequest", "machine.EtcdForfeitLeadershipResponse"],
      EtcdLeaveCluster: ["machine.EtcdLeaveClusterRequest", "machine.EtcdLeaveClusterResponse"],
      EtcdRemoveMemberByID: ["machine.EtcdRemoveMemberByIDRequest", "machine.EtcdRemoveMemberByIDResponse"],
      EtcdSnapshot: ["machine.EtcdSnapshotRequest", "common.Data"],
      EtcdRecover: ["common.Data", "machine.EtcdRecoverResponse"],
    };
    return known[method]!;
  };
  const enc = (type: string, v: object) => {
    const t = lookupMessage(type);
    return Buffer.from(t.encode(t.fromObject(v)).finish());
  };
  const dec = (type: string, b: Buffer) => {
    const t = lookupMessage(type);
    return t.toObject(t.decode(b), decodeOpts) as Record<string, unknown>;
  };

  const node: EtcdNode = {
    name: opts.name,
    root,
    paths,
    ports,
    state,
    supervisor,
    startWaiting: () => supervisor.start(service()),
    call: (method, req = {}) => {
      const [reqType, resType] = types(method);
      return new Promise((resolve, reject) => {
        stub[method]!.call(stub, enc(reqType, req), (err: grpc.ServiceError | null, res: Buffer) =>
          err ? reject(err) : resolve(dec(resType, res)),
        );
      });
    },
    upload: (method, chunks) => {
      const [reqType, resType] = types(method);
      return new Promise((resolve, reject) => {
        const call = stub[method]!.call(stub, (err: grpc.ServiceError | null, res: Buffer) =>
          err ? reject(err) : resolve(dec(resType, res)),
        ) as grpc.ClientWritableStream<Buffer>;
        for (const c of chunks) call.write(enc(reqType, { bytes: c }));
        call.end();
      });
    },
    stream: async (method, req = {}) => {
      const [reqType, resType] = types(method);
      const call = stub[method]!.call(stub, enc(reqType, req)) as grpc.ClientReadableStream<Buffer>;
      const out: Record<string, unknown>[] = [];
      for await (const m of call) out.push(dec(resType, m as Buffer));
      return out;
    },
    client: async () => new EtcdClient(local, await tls()),
    until: (want, healthy = want === "Running") =>
      new Promise((resolve, reject) => {
        // A failure from before the wait (one a test caused, then answered with Bootstrap) is not this one.
        const since = Date.now();
        const check = () => {
          const s = supervisor.get("etcd");
          if (s && s.state === want && (!healthy || s.health.healthy)) {
            off();
            resolve();
          } else if (s?.state === "Failed" && want !== "Failed" && (s.events.at(-1)?.ts.getTime() ?? 0) >= since) {
            off();
            reject(new Error(`etcd Failed while awaited ${want}: ${s.events.at(-1)?.msg}`));
          }
        };
        const off = supervisor.onChange(check);
        check();
      }),
    close: async () => {
      await supervisor.stopAll();
      ac.abort();
      (stub as unknown as grpc.Client).close();
      server.forceShutdown();
      await rm(root, { recursive: true, force: true });
    },
  };
  return node;
}
