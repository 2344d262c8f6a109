import * as grpc from "@grpc/grpc-js";
import { chmod, mkdir, mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { allMethods } from "../api/index.js";
import { describeError } from "../errors.js";
import { cosiFeed, type ResourceFeed } from "../grpc/resource-watch.js";
import { bindServer, drainAndClose } from "../grpc/server.js";
import { logger } from "../log.js";
import { splitHostPort } from "../sys/host-port.js";
import {
  hostnameStatusDefinition,
  HostnameStatusId,
  HostnameStatusType,
  NETWORK_NAMESPACE,
  nodeAddressDefinition,
  NodeAddressIds,
  NodeAddressType,
} from "../resources/catalog/network.js";
import {
  apiCertsDefinition,
  ApiCertificatesId,
  ApiCertificatesType,
  maintenanceServiceCertsDefinition,
  MaintenanceServiceCertificatesId,
  MaintenanceServiceCertificatesType,
  SECRETS_NAMESPACE,
} from "../resources/catalog/secrets.js";
import { RemoteBackends } from "./remote-backends.js";
import { frontCaller, socketCaller, type ListenerMode } from "./credentials.js";
import { ApiFront } from "./front-listener.js";
import { type Backends } from "./director.js";
import { buildProxyServer, type ProxiedMethod } from "./proxy-server.js";
import { BackendSession } from "./backend-session.js";
import { addressesFromProto, SelfNames } from "./self.js";

const log = logger("apid");
const bindRetryMs = 1000;

export interface ApidOptions {
  listen: string; // host:port
  machinedSocket: string;
  /** machine.features.rbac: roles from client certificates (otherwise every caller holds all roles). */
  enableRbac: boolean;
  /** machine.features.apidCheckExtKeyUsage: client certificates must be clientAuth-only. */
  checkExtKeyUsage: boolean;
  /** apid's own unix socket (no TLS; roles from `talos-role`); none when undefined. */
  apidSocket?: string;
  /** Where the certificates and names are read: machined's COSI API on its socket unless given (apid inside machined reads its state). */
  resources?: ResourceFeed;
  signal: AbortSignal;
}

interface PemPair {
  crt?: Buffer;
  key?: Buffer;
}

/**
 * apid: the TLS front door on :50000. It follows the certificates machined
 * publishes as resources (maintenance certificate first, then the API
 * certificates issued from the config's OS CA) and re-binds its listener when
 * they change; every call is relayed as raw bytes to machined (front-listener.ts).
 */
export async function runApid(opts: ApidOptions): Promise<void> {
  const target = `unix:${opts.machinedSocket}`;
  const resources = opts.resources ?? cosiFeed(opts.machinedSocket, log);
  const methods: ProxiedMethod[] = allMethods().map((m) => ({
    path: m.path,
    requestStream: m.requestStream,
    responseStream: m.responseStream,
  }));
  const remotes = new RemoteBackends();
  const machinedSession = new BackendSession("machined", () => net.connect(opts.machinedSocket));
  const backends: Backends = {
    local: machinedSession,
    get canForward() {
      return remotes.canForward;
    },
    remote: (t) => remotes.session(t),
  };
  const self = new SelfNames(splitHostPort(opts.listen).host);
  const isSelf = (t: string) => self.isSelf(t);
  const proxyBase = { methods, backends, isSelf, machinedTarget: target };
  // The listener's grpc-js proxy trusts the roles in its calls, so its socket sits in a directory only apid's
  // user can enter (mkdtemp: 0700). A socket, not an in-process stream pair: Node relays those through JS (fan-out
  // calls took 1.4 ms more agent CPU, bench/rpc-latency). The listener reports delivered replies itself.
  const proxyDir = await mkdtemp(path.join(os.tmpdir(), "basalt-apid-"));
  const proxySocket = path.join(proxyDir, "proxy.sock");
  const proxy = buildProxyServer({ methods, backends, isSelf, authenticate: frontCaller });
  await bindServer(proxy, `unix:${proxySocket}`, grpc.ServerCredentials.createInsecure());
  const proxySession = new BackendSession("apid's proxy", () => net.connect(proxySocket));

  let current: { front: ApiFront; key: string } | undefined;
  let apiCerts: { server: PemPair; acceptedCAs: string[] } | undefined;
  let maintenanceCert: PemPair | undefined;

  const rebind = async () => {
    const mode = chooseMode(apiCerts, maintenanceCert, opts);
    // Only a change of kind (maintenance <-> mTLS) re-binds; renewed certificates are swapped in place.
    const key = mode ? JSON.stringify({ kind: mode.kind, rbac: opts.enableRbac, eku: opts.checkExtKeyUsage }) : "";
    if (current && current.key === key && mode) {
      current.front.update(mode);
      log.info("api certificates updated", { mode: mode.kind });
      return;
    }
    const old = current;
    current = undefined;
    if (old) await old.front.close();
    if (!mode) return;
    const front = new ApiFront({
      listen: opts.listen,
      mode,
      methods,
      machined: machinedSession,
      proxy: proxySession,
      machinedTarget: target,
      isSelf,
      remote: (t) => remotes.session(t),
      canForward: () => remotes.canForward,
    });
    await front.listen();
    current = { front, key };
    log.info("api listener ready", { listen: opts.listen, mode: mode.kind });
  };

  // A failed bind is retried until it succeeds: without its listener the node cannot be reached at all.
  let chain = Promise.resolve();
  let retry: NodeJS.Timeout | undefined;
  const schedule = () => {
    clearTimeout(retry);
    chain = chain.then(rebind).catch((err: unknown) => {
      log.error("binding the api listener failed, retrying in 1 s", { listen: opts.listen, error: describeError(err) });
      if (!opts.signal.aborted) retry = setTimeout(schedule, bindRetryMs);
    });
  };
  opts.signal.addEventListener("abort", () => clearTimeout(retry), { once: true });

  resources.follow(
    { namespace: SECRETS_NAMESPACE, type: ApiCertificatesType, id: ApiCertificatesId, definition: apiCertsDefinition },
    opts.signal,
    (spec) => {
      apiCerts = spec
        ? {
            server: (spec["server"] ?? {}) as PemPair,
            acceptedCAs: ((spec["accepted_c_as"] ?? []) as { crt?: Buffer }[])
              .map((c) => c.crt?.toString() ?? "")
              .filter(Boolean),
          }
        : undefined;
      // The client certificate (control plane only) is what lets this apid forward to other nodes.
      const client = (spec?.["client"] ?? {}) as PemPair;
      remotes.setIdentity(
        apiCerts && client.crt?.length && client.key?.length
          ? { crt: client.crt.toString(), key: client.key.toString(), acceptedCAs: apiCerts.acceptedCAs }
          : undefined,
      );
      schedule();
    },
  );
  resources.follow(
    {
      namespace: SECRETS_NAMESPACE,
      type: MaintenanceServiceCertificatesType,
      id: MaintenanceServiceCertificatesId,
      definition: maintenanceServiceCertsDefinition,
    },
    opts.signal,
    (spec) => {
      maintenanceCert = spec ? ((spec["server"] ?? {}) as PemPair) : undefined;
      schedule();
    },
  );
  resources.follow(
    {
      namespace: NETWORK_NAMESPACE,
      type: HostnameStatusType,
      id: HostnameStatusId,
      definition: hostnameStatusDefinition,
    },
    opts.signal,
    (spec) => {
      self.update({ hostname: String(spec?.["hostname"] ?? ""), domainname: String(spec?.["domainname"] ?? "") });
    },
  );
  resources.follow(
    {
      namespace: NETWORK_NAMESPACE,
      type: NodeAddressType,
      id: NodeAddressIds.current,
      definition: nodeAddressDefinition,
    },
    opts.signal,
    (spec) => {
      self.update({ addresses: addressesFromProto(spec?.["addresses"]) });
    },
  );

  // The socket is a convenience beside :50000: apid (unprivileged) still serves the network when its directory is not writable.
  const socketServer = opts.apidSocket
    ? await listenSocket(opts.apidSocket, buildProxyServer({ ...proxyBase, authenticate: socketCaller })).catch(
        (err: unknown) => {
          log.error("api socket not served", { socket: opts.apidSocket, error: describeError(err) });
          return undefined;
        },
      )
    : undefined;

  await new Promise<void>((resolve) => opts.signal.addEventListener("abort", () => resolve(), { once: true }));
  await chain;
  if (current) await current.front.close();
  if (socketServer) await shutdown(socketServer);
  proxySession.close();
  machinedSession.close();
  await shutdown(proxy);
  await rm(proxyDir, { recursive: true, force: true });
  remotes.close();
  resources.close();
}

/**
 * Serves the proxy on apid's unix socket. The directory is apid's own (mode 0750; on a
 * node machined creates it owned by apid's user, since /system/run is root's); a stale
 * socket from an earlier run is replaced.
 */
async function listenSocket(socket: string, server: grpc.Server): Promise<grpc.Server> {
  await mkdir(path.dirname(socket), { recursive: true, mode: 0o750 });
  await rm(socket, { force: true });
  await bindServer(server, `unix:${socket}`, grpc.ServerCredentials.createInsecure());
  await chmod(socket, 0o660);
  log.info("api socket listening", { socket });
  return server;
}

function chooseMode(
  api: { server: PemPair; acceptedCAs: string[] } | undefined,
  maintenance: PemPair | undefined,
  features: { enableRbac: boolean; checkExtKeyUsage: boolean },
): ListenerMode | undefined {
  if (api?.server.crt?.length && api.server.key?.length && api.acceptedCAs.length > 0) {
    return {
      kind: "mtls",
      serverCert: api.server.crt.toString(),
      serverKey: api.server.key.toString(),
      acceptedCAs: api.acceptedCAs,
      checkExtKeyUsage: features.checkExtKeyUsage,
      enableRbac: features.enableRbac,
    };
  }
  if (maintenance?.crt?.length && maintenance.key?.length) {
    return { kind: "maintenance", serverCert: maintenance.crt.toString(), serverKey: maintenance.key.toString() };
  }
  return undefined;
}

async function shutdown(server: grpc.Server): Promise<void> {
  // Let in-flight replies (e.g. the ApplyConfiguration that triggered this) finish first.
  await drainAndClose(server, 2000);
}
