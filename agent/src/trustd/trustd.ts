import * as grpc from "@grpc/grpc-js";
import { liveServerCredentials, type LiveServerCredentials } from "../apid/credentials.js";
import { describeError } from "../errors.js";
import { addService, bindServer } from "../grpc/server.js";
import { logger } from "../log.js";
import {
  osRootDefinition,
  OSRootSecretsId,
  OSRootSecretsType,
  SECRETS_NAMESPACE,
  trustdCertsDefinition,
  TrustdCertificatesId,
  TrustdCertificatesType,
  type OSRootSpec,
} from "../resources/catalog/secrets.js";
import { runtimeClient, watchResource } from "../grpc/resource-watch.js";
import { securityServiceImpl, tokenGuard } from "./service.js";

const log = logger("trustd");

export interface TrustdOptions {
  /** host:port, 0.0.0.0:50001 on a node. */
  listen: string;
  /** machined's trustd runtime socket, where its secrets are watched (read-only, filtered). */
  runtimeSocket: string;
  signal: AbortSignal;
}

interface PemWire {
  crt?: Buffer;
  key?: Buffer;
}

const text = (b: Buffer | undefined) => b?.toString("utf8") ?? "";

/** OSRootSecrets as the COSI wire carries it (PEM bytes, snake_case). */
function osRootFromWire(spec: Record<string, unknown>): Pick<OSRootSpec, "issuingCA" | "acceptedCAs" | "token"> {
  const ca = spec["issuing_ca"] as PemWire | undefined;
  return {
    ...(ca?.crt?.length ? { issuingCA: { crt: text(ca.crt), key: text(ca.key) } } : {}),
    acceptedCAs: ((spec["accepted_c_as"] ?? []) as PemWire[]).map((c) => ({ crt: text(c.crt) })).filter((c) => c.crt !== ""),
    token: String(spec["token"] ?? ""),
  };
}

/**
 * trustd: signs worker CSRs on :50001 for callers holding the machine token. It
 * reads only the OS root secrets and its own certificate, by watching them over
 * machined's socket; the listener binds once its certificate is published and
 * takes renewed certificates in place.
 */
export async function runTrustd(opts: TrustdOptions): Promise<void> {
  const runtime = runtimeClient(opts.runtimeSocket);
  let root: ReturnType<typeof osRootFromWire> | undefined;
  let listener: { server: grpc.Server; creds: LiveServerCredentials } | undefined;
  let binding: Promise<void> = Promise.resolve();

  watchResource(runtime.client, { namespace: SECRETS_NAMESPACE, type: OSRootSecretsType, id: OSRootSecretsId, specType: osRootDefinition.protoSpecType }, opts.signal, log, (spec) => {
    root = spec ? osRootFromWire(spec) : undefined;
  });

  const serve = async (server: PemWire) => {
    // Server-only TLS (no client certificate), as Talos's trustd: callers prove themselves with the token.
    const mode = { kind: "maintenance" as const, serverCert: text(server.crt), serverKey: text(server.key) };
    if (listener) {
      listener.creds.update(mode);
      log.info("trustd certificate renewed");
      return;
    }
    const creds = liveServerCredentials(mode);
    const grpcServer = new grpc.Server();
    addService(grpcServer, "securityapi.SecurityService", securityServiceImpl(() => root, log), tokenGuard(() => root, log));
    await bindServer(grpcServer, opts.listen, creds.credentials);
    listener = { server: grpcServer, creds };
    log.info("trustd listening", { listen: opts.listen });
  };

  // A failed bind is retried with the newest certificate until it succeeds: workers depend on this listener.
  let retry: NodeJS.Timeout | undefined;
  let latest: PemWire | undefined;
  const schedule = () => {
    clearTimeout(retry);
    binding = binding.then(() => (latest ? serve(latest) : undefined)).catch((err: unknown) => {
      log.error("serving trustd failed, retrying in 1 s", { listen: opts.listen, error: describeError(err) });
      if (!opts.signal.aborted) retry = setTimeout(schedule, 1000);
    });
  };
  opts.signal.addEventListener("abort", () => clearTimeout(retry), { once: true });

  watchResource(runtime.client, { namespace: SECRETS_NAMESPACE, type: TrustdCertificatesType, id: TrustdCertificatesId, specType: trustdCertsDefinition.protoSpecType }, opts.signal, log, (spec) => {
    const server = spec?.["server"] as PemWire | undefined;
    // A destroyed certificate keeps the last one serving, as Talos's provider ignores destroy events.
    if (!server?.crt?.length || !server.key?.length) return;
    latest = server;
    schedule();
  });

  await new Promise<void>((resolve) => (opts.signal.aborted ? resolve() : opts.signal.addEventListener("abort", () => resolve(), { once: true })));
  await binding;
  if (listener) await new Promise<void>((resolve) => listener!.server.tryShutdown(() => resolve()));
  runtime.close();
}
