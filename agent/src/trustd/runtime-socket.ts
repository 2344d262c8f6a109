import * as grpc from "@grpc/grpc-js";
import { chown, chmod, mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { PermissionDeniedError } from "../errors.js";
import { cosiStateImpl } from "../grpc/cosi-server.js";
import { addService, bindServer, type SurfaceCall } from "../grpc/server.js";
import { Role } from "../grpc/roles.js";
import { OSRootSecretsId, OSRootSecretsType, SECRETS_NAMESPACE, TrustdCertificatesId, TrustdCertificatesType } from "../resources/catalog/secrets.js";
import type { ResourceState } from "../resources/state.js";

/** What trustd may read, as Talos's filter on trustd's runtime.sock: its OS root secrets and its own certificate. */
const readable = [
  { namespace: SECRETS_NAMESPACE, type: OSRootSecretsType, id: OSRootSecretsId },
  { namespace: SECRETS_NAMESPACE, type: TrustdCertificatesType, id: TrustdCertificatesId },
];
const readMethods = new Set(["Get", "Watch"]);

/** Refuses everything but a Get or single-resource Watch of the resources above. */
function trustdFilter(path: string, call: SurfaceCall): void {
  const method = path.slice(path.lastIndexOf("/") + 1);
  // Unary and server-streaming calls carry their decoded request when the guard runs.
  const req = (call as unknown as { request?: { namespace?: string; type?: string; id?: string } }).request;
  const allowed = readMethods.has(method) && readable.some((r) => r.namespace === req?.namespace && r.type === req?.type && r.id === req?.id);
  if (!allowed) throw new PermissionDeniedError("not authorized", { method, namespace: req?.namespace, type: req?.type });
}

export interface TrustdRuntimeSocket {
  close(): Promise<void>;
}

/**
 * machined's COSI socket for trustd: read-only, trustd's two resources only, owned by
 * trustd's user (mode 0600), so trustd needs neither root nor machined's full socket.
 */
export async function serveTrustdRuntime(state: ResourceState, socket: string, owner?: { uid: number; gid: number }): Promise<TrustdRuntimeSocket> {
  const server = new grpc.Server();
  addService(server, "cosi.resource.State", cosiStateImpl(state, { rolesOf: () => [Role.admin] }), trustdFilter);
  await mkdir(path.dirname(socket), { recursive: true, mode: 0o750 });
  await rm(socket, { force: true });
  await bindServer(server, `unix:${socket}`, grpc.ServerCredentials.createInsecure());
  await chmod(socket, 0o600);
  if (owner) {
    await chown(path.dirname(socket), owner.uid, owner.gid);
    await chown(socket, owner.uid, owner.gid);
  }
  return {
    close: async () => {
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await rm(socket, { force: true });
    },
  };
}
