import * as grpc from "@grpc/grpc-js";
import { X509Certificate } from "node:crypto";
import type { PeerCertificate } from "node:tls";
import { roleKey } from "../grpc/metadata.js";
import { tlsKeyPem } from "../pki/tls.js";
import { allRoles, normalizeRoles, Role } from "../grpc/roles.js";
import type { SurfaceCall } from "../grpc/server.js";
import type { Caller } from "./proxy.js";

/** The TLS material apid serves with, as machined publishes it. */
export type ListenerMode =
  | { kind: "maintenance"; serverCert: string; serverKey: string }
  | { kind: "mtls"; serverCert: string; serverKey: string; acceptedCAs: string[]; checkExtKeyUsage: boolean; enableRbac: boolean };

const clientAuthOid = "1.3.6.1.5.5.7.3.2";

export function serverCredentials(mode: ListenerMode): grpc.ServerCredentials {
  const pair = { cert_chain: Buffer.from(mode.serverCert), private_key: Buffer.from(tlsKeyPem(mode.serverKey)) };
  if (mode.kind === "maintenance") return grpc.ServerCredentials.createSsl(null, [pair], false);
  return grpc.ServerCredentials.createSsl(Buffer.from(mode.acceptedCAs.join("\n")), [pair], true);
}

function unauthenticated(details: string): grpc.ServiceError {
  return Object.assign(new Error(details), { code: grpc.status.UNAUTHENTICATED, details, metadata: new grpc.Metadata() });
}

function organizations(cert: PeerCertificate): string[] {
  const o = (cert.subject as unknown as Record<string, string | string[] | undefined>)?.["O"];
  if (o === undefined) return [];
  return Array.isArray(o) ? o : [o];
}

/**
 * Roles of a caller: in maintenance everyone is a reader (machined applies the
 * maintenance rules); with mTLS the roles are the client certificate's O values,
 * replaced by `talos-role` metadata only for peers holding os:impersonator;
 * without RBAC every authenticated caller holds every role.
 */
export function authenticate(mode: ListenerMode, call: SurfaceCall): Caller {
  if (mode.kind === "maintenance") return { roles: [Role.reader], maintenance: true };
  const cert = call.getAuthContext()?.sslPeerCertificate;
  if (!cert || !cert.raw) throw unauthenticated("client certificate is required");
  if (mode.checkExtKeyUsage) {
    const usages = new X509Certificate(cert.raw).keyUsage ?? [];
    if (usages.length !== 1 || usages[0] !== clientAuthOid) {
      throw unauthenticated("client certificate must have extended key usage clientAuth only");
    }
  }
  if (!mode.enableRbac) return { roles: [...allRoles] };
  let roles = normalizeRoles(organizations(cert));
  if (roles.includes(Role.impersonator)) {
    const asserted = normalizeRoles(call.metadata.get(roleKey).map(String));
    if (asserted.length > 0) roles = asserted;
  }
  return { roles };
}
