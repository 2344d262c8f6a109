import * as grpc from "@grpc/grpc-js";
import os from "node:os";
import { allMethods, decode, serviceDefinition } from "../api/index.js";
import { describeError } from "../errors.js";
import { roleKey } from "../grpc/metadata.js";
import { logger } from "../log.js";
import {
  apiCertsDefinition,
  ApiCertificatesId,
  ApiCertificatesType,
  maintenanceServiceCertsDefinition,
  MaintenanceServiceCertificatesId,
  MaintenanceServiceCertificatesType,
  SECRETS_NAMESPACE,
} from "../resources/catalog/secrets.js";
import { authenticate, liveServerCredentials, type ListenerMode, type LiveServerCredentials } from "./credentials.js";
import { buildProxyServer } from "./proxy.js";

const log = logger("apid");

export interface ApidOptions {
  listen: string; // host:port
  machinedSocket: string;
  /** machine.features.rbac: roles from client certificates (otherwise every caller holds all roles). */
  enableRbac: boolean;
  /** machine.features.apidCheckExtKeyUsage: client certificates must be clientAuth-only. */
  checkExtKeyUsage: boolean;
  signal: AbortSignal;
}

interface PemPair {
  crt?: Buffer;
  key?: Buffer;
}

/** Names and addresses by which callers may address this node in `node`/`nodes`. */
function isSelf(target: string): boolean {
  const t = target.replace(/^\[|\]$/g, "").toLowerCase();
  if (t === "localhost" || t === os.hostname().toLowerCase()) return true;
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.address.toLowerCase() === t) return true;
  }
  return false;
}

/**
 * apid: the TLS front door on :50000. It follows the certificates machined
 * publishes as resources (maintenance certificate first, then the API
 * certificates issued from the config's OS CA) and re-binds its listener when
 * they change; every call is relayed as raw bytes to machined.
 */
export async function runApid(opts: ApidOptions): Promise<void> {
  const target = `unix:${opts.machinedSocket}`;
  const local = new grpc.Client(target, grpc.credentials.createInsecure());
  const State = grpc.makeGenericClientConstructor(serviceDefinition("cosi.resource.State"), "State");
  const cosi = new State(target, grpc.credentials.createInsecure()) as unknown as WatchClient;
  const methods = allMethods().map((m) => ({ path: m.path, requestStream: m.requestStream, responseStream: m.responseStream }));

  let current: { server: grpc.Server; key: string; creds: LiveServerCredentials } | undefined;
  let apiCerts: { server: PemPair; acceptedCAs: string[] } | undefined;
  let maintenanceCert: PemPair | undefined;

  const rebind = async () => {
    const mode = chooseMode(apiCerts, maintenanceCert, opts);
    // Only a change of kind (maintenance <-> mTLS) re-binds; renewed certificates are swapped in place.
    const key = mode ? JSON.stringify({ kind: mode.kind, rbac: opts.enableRbac, eku: opts.checkExtKeyUsage }) : "";
    if (current && current.key === key && mode) {
      current.creds.update(mode);
      log.info("api certificates updated", { mode: mode.kind });
      return;
    }
    const old = current;
    current = undefined;
    if (old) await shutdown(old.server);
    if (!mode) return;
    const creds = liveServerCredentials(mode);
    const server = buildProxyServer({ methods, local, isSelf, authenticate: (call) => authenticate(mode, call as never) });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(opts.listen, creds.credentials, (err) => (err ? reject(err) : resolve())),
    );
    current = { server, key, creds };
    log.info("api listener ready", { listen: opts.listen, mode: mode.kind });
  };

  let chain = Promise.resolve();
  const schedule = () => {
    chain = chain.then(rebind).catch((err) => log.error("rebinding the api listener failed", { error: describeError(err) }));
  };

  watchOne(cosi, ApiCertificatesType, ApiCertificatesId, apiCertsDefinition.protoSpecType, opts.signal, (spec) => {
    apiCerts = spec
      ? { server: (spec["server"] ?? {}) as PemPair, acceptedCAs: ((spec["accepted_c_as"] ?? []) as { crt?: Buffer }[]).map((c) => c.crt?.toString() ?? "").filter(Boolean) }
      : undefined;
    schedule();
  });
  watchOne(cosi, MaintenanceServiceCertificatesType, MaintenanceServiceCertificatesId, maintenanceServiceCertsDefinition.protoSpecType, opts.signal, (spec) => {
    maintenanceCert = spec ? ((spec["server"] ?? {}) as PemPair) : undefined;
    schedule();
  });

  await new Promise<void>((resolve) => opts.signal.addEventListener("abort", () => resolve(), { once: true }));
  await chain;
  if (current) await shutdown(current.server);
  local.close();
  (cosi as unknown as grpc.Client).close();
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
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, 2000);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

interface WatchEvent {
  resource?: { metadata?: { id?: string }; spec?: { proto_spec?: Buffer } };
  event_type?: number;
}
interface WatchClient {
  Watch(req: object, md: grpc.Metadata): grpc.ClientReadableStream<{ event: WatchEvent[] }>;
}

const DESTROYED = 2;

/** Follows one resource over machined's COSI API, reconnecting until aborted. */
function watchOne(
  client: WatchClient,
  type: string,
  id: string,
  specType: string,
  signal: AbortSignal,
  onSpec: (spec: Record<string, unknown> | undefined) => void,
): void {
  const start = () => {
    if (signal.aborted) return;
    const md = new grpc.Metadata();
    md.add(roleKey, "os:admin");
    const stream = client.Watch({ namespace: SECRETS_NAMESPACE, type, id, options: {}, api_version: 1 }, md);
    const stop = () => stream.cancel();
    signal.addEventListener("abort", stop, { once: true });
    stream.on("data", (resp) => {
      for (const ev of resp.event ?? []) {
        if (ev.event_type === DESTROYED) onSpec(undefined);
        else if (ev.resource?.spec?.proto_spec) onSpec(decode(specType, ev.resource.spec.proto_spec) as Record<string, unknown>);
      }
    });
    stream.on("error", (err: grpc.ServiceError) => {
      signal.removeEventListener("abort", stop);
      if (err.code !== grpc.status.CANCELLED) log.warn("certificate watch failed; retrying", { type, error: err.details });
      setTimeout(start, 1000).unref();
    });
  };
  start();
}
