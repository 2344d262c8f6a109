import * as grpc from "@grpc/grpc-js";
import { liveServerCredentials, type LiveServerCredentials } from "../apid/credentials.js";
import { describeError } from "../errors.js";
import { addService, bindServer, drainAndClose } from "../grpc/server.js";
import { logger } from "../log.js";
import {
  OSRootSecretsId,
  OSRootSecretsType,
  SECRETS_NAMESPACE,
  TrustdCertificatesId,
  TrustdCertificatesType,
  type OSRootSpec,
  type TrustdCertsSpec,
} from "../resources/catalog/secrets.js";
import type { PemCertAndKey } from "../resources/codec.js";
import type { ResourceState } from "../resources/state.js";
import { securityServiceImpl, tokenGuard } from "./service.js";

const log = logger("trustd");

export interface TrustdOptions {
  /** host:port, 0.0.0.0:50001 on a node. */
  listen: string;
  /** machined's resource store: trustd reads the OS root secrets and its own certificate from it, nothing else. */
  state: ResourceState;
  signal: AbortSignal;
}

/** Open calls get this long to finish once trustd stops; then the listener's connections are cut. */
const drainMs = 2000;

/**
 * trustd: signs worker CSRs on :50001 for callers holding the machine token. It runs
 * inside machined's process and watches the OS root secrets and its own certificate in
 * machined's store; the listener binds once its certificate is published and takes
 * renewed certificates in place. Resolves once `signal` aborts and the listener is closed.
 */
export async function runTrustd(opts: TrustdOptions): Promise<void> {
  let root: OSRootSpec | undefined;
  let listener: { server: grpc.Server; creds: LiveServerCredentials } | undefined;
  let binding: Promise<void> = Promise.resolve();

  opts.state.watch<OSRootSpec>(
    { namespace: SECRETS_NAMESPACE, type: OSRootSecretsType, id: OSRootSecretsId },
    { signal: opts.signal },
    (ev) => {
      root = ev.type === "destroyed" ? undefined : ev.resource.spec;
    },
  );

  const serve = async (server: PemCertAndKey) => {
    // Server-only TLS (no client certificate), as Talos's trustd: callers prove themselves with the token.
    const mode = { kind: "maintenance" as const, serverCert: server.crt, serverKey: server.key };
    if (listener) {
      listener.creds.update(mode);
      log.info("trustd certificate renewed");
      return;
    }
    if (opts.signal.aborted) return;
    const creds = liveServerCredentials(mode);
    const grpcServer = new grpc.Server();
    addService(
      grpcServer,
      "securityapi.SecurityService",
      securityServiceImpl(() => root, log),
      tokenGuard(() => root, log),
    );
    await bindServer(grpcServer, opts.listen, creds.credentials);
    listener = { server: grpcServer, creds };
    log.info("trustd listening", { listen: opts.listen });
  };

  // A failed bind is retried with the newest certificate until it succeeds: workers depend on this listener.
  let retry: NodeJS.Timeout | undefined;
  let latest: PemCertAndKey | undefined;
  const schedule = () => {
    clearTimeout(retry);
    binding = binding
      .then(() => (latest ? serve(latest) : undefined))
      .catch((err: unknown) => {
        log.error("serving trustd failed, retrying in 1 s", { listen: opts.listen, error: describeError(err) });
        if (!opts.signal.aborted) retry = setTimeout(schedule, 1000);
      });
  };
  opts.signal.addEventListener("abort", () => clearTimeout(retry), { once: true });

  opts.state.watch<TrustdCertsSpec>(
    { namespace: SECRETS_NAMESPACE, type: TrustdCertificatesType, id: TrustdCertificatesId },
    { signal: opts.signal },
    (ev) => {
      // A destroyed certificate keeps the last one serving, as Talos's provider ignores destroy events.
      if (ev.type === "destroyed") return;
      const server = ev.resource.spec.server;
      if (!server.crt || !server.key) return;
      latest = server;
      schedule();
    },
  );

  await new Promise<void>((resolve) =>
    opts.signal.aborted ? resolve() : opts.signal.addEventListener("abort", () => resolve(), { once: true }),
  );
  await binding;
  if (listener) await closeListener(listener.server);
}

async function closeListener(server: grpc.Server): Promise<void> {
  await drainAndClose(server, drainMs);
  log.info("trustd stopped listening");
}
