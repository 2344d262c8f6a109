import * as grpc from "@grpc/grpc-js";
import { X509Certificate } from "node:crypto";
import type { PeerCertificate, SecureContextOptions } from "node:tls";
import { listenerKey, roleKey } from "../grpc/metadata.js";
import { tlsKeyPem } from "../pki/tls.js";
import { allRoles, isAuthorized, normalizeRoles, Role } from "../grpc/roles.js";
import type { SurfaceCall } from "../grpc/server.js";
import type { Caller } from "./director.js";

/** The TLS material apid serves with, as machined publishes it. */
export type ListenerMode =
  | { kind: "maintenance"; serverCert: string; serverKey: string }
  | {
      kind: "mtls";
      serverCert: string;
      serverKey: string;
      acceptedCAs: string[];
      checkExtKeyUsage: boolean;
      enableRbac: boolean;
    };

const clientAuthOid = "1.3.6.1.5.5.7.3.2";

/** TLS settings of apid's listener: maintenance serves without asking for a client certificate; mTLS requires one from the accepted CAs. */
export function tlsOptions(
  mode: ListenerMode,
): SecureContextOptions & { requestCert: boolean; rejectUnauthorized: boolean } {
  const mtls = mode.kind === "mtls";
  return {
    cert: mode.serverCert,
    key: tlsKeyPem(mode.serverKey),
    ...(mtls ? { ca: mode.acceptedCAs.join("\n") } : {}),
    requestCert: mtls,
    rejectUnauthorized: mtls,
  };
}

/** Certificate material handed to grpc-js as it changes, so renewals need no re-bind. */
class MemoryCertificateProvider implements grpc.experimental.CertificateProvider {
  private identity: grpc.experimental.IdentityCertificateUpdate | null = null;
  private ca: grpc.experimental.CaCertificateUpdate | null = null;
  private readonly identityListeners = new Set<grpc.experimental.IdentityCertificateUpdateListener>();
  private readonly caListeners = new Set<grpc.experimental.CaCertificateUpdateListener>();

  setIdentity(certificate: string, key: string): void {
    this.identity = { certificate: Buffer.from(certificate), privateKey: Buffer.from(tlsKeyPem(key)) };
    for (const l of this.identityListeners) l(this.identity);
  }
  setCa(pems: string[]): void {
    this.ca = { caCertificate: Buffer.from(pems.join("\n")) };
    for (const l of this.caListeners) l(this.ca);
  }
  addCaCertificateListener(l: grpc.experimental.CaCertificateUpdateListener): void {
    this.caListeners.add(l);
    // Deliver after grpc-js has registered its watcher (it subscribes before it starts watching).
    queueMicrotask(() => this.ca && this.caListeners.has(l) && l(this.ca));
  }
  removeCaCertificateListener(l: grpc.experimental.CaCertificateUpdateListener): void {
    this.caListeners.delete(l);
  }
  addIdentityCertificateListener(l: grpc.experimental.IdentityCertificateUpdateListener): void {
    this.identityListeners.add(l);
    queueMicrotask(() => this.identity && this.identityListeners.has(l) && l(this.identity));
  }
  removeIdentityCertificateListener(l: grpc.experimental.IdentityCertificateUpdateListener): void {
    this.identityListeners.delete(l);
  }
}

/** Server credentials for a listener mode whose certificates can be replaced in place. */
export interface LiveServerCredentials {
  credentials: grpc.ServerCredentials;
  /** Installs new material of the same kind (e.g. a renewed certificate or new accepted CAs). */
  update(mode: ListenerMode): void;
}

export function liveServerCredentials(mode: ListenerMode): LiveServerCredentials {
  const identity = new MemoryCertificateProvider();
  const ca = mode.kind === "mtls" ? new MemoryCertificateProvider() : null;
  const update = (m: ListenerMode) => {
    identity.setIdentity(m.serverCert, m.serverKey);
    if (ca && m.kind === "mtls") ca.setCa(m.acceptedCAs);
  };
  update(mode);
  // Maintenance: TLS without asking for a client certificate; mTLS: required and verified against the accepted CAs.
  // (grpc-js names the first parameter caCertificateProvider but passes it on as the identity provider.)
  const credentials = grpc.experimental.createCertificateProviderServerCredentials(identity, ca, mode.kind === "mtls");
  return { credentials, update };
}

// Parsing the certificate again took about a quarter of apid's CPU per call (bench/rpc-latency --cpu-prof);
// the verdict is remembered by the certificate's SHA-256 fingerprint, which Node computes anyway.
const clientAuthOnlyByFingerprint = new Map<string, boolean>();
const clientAuthOnlyRemembered = 256;

function clientAuthOnly(cert: PeerCertificate): boolean {
  const known = clientAuthOnlyByFingerprint.get(cert.fingerprint256);
  if (known !== undefined) return known;
  const usages = new X509Certificate(cert.raw).keyUsage ?? [];
  const verdict = usages.length === 1 && usages[0] === clientAuthOid;
  if (clientAuthOnlyByFingerprint.size >= clientAuthOnlyRemembered) clientAuthOnlyByFingerprint.clear();
  clientAuthOnlyByFingerprint.set(cert.fingerprint256, verdict);
  return verdict;
}

function unauthenticated(details: string): grpc.ServiceError {
  return Object.assign(new Error(details), {
    code: grpc.status.UNAUTHENTICATED,
    details,
    metadata: new grpc.Metadata(),
  });
}

function organizations(cert: PeerCertificate): string[] {
  const o = (cert.subject as unknown as Record<string, string | string[] | undefined>)?.["O"];
  if (o === undefined) return [];
  return Array.isArray(o) ? o : [o];
}

/**
 * A call apid's listener already authenticated and handed to its grpc-js proxy in the same process
 * (front-listener.ts): the roles and the maintenance tag are the listener's, which replaced any the caller sent.
 */
export function frontCaller(call: SurfaceCall): Caller {
  const roles = normalizeRoles(call.metadata.get(roleKey).map(String));
  return call.metadata.get(listenerKey).map(String).includes("maintenance") ? { roles, maintenance: true } : { roles };
}

/** A caller on apid's unix socket: the socket's permissions are the authentication; roles come from `talos-role`. */
export function socketCaller(call: SurfaceCall): Caller {
  return { roles: normalizeRoles(call.metadata.get(roleKey).map(String)) };
}

/**
 * Roles of a caller, from what its connection and headers carry: in maintenance everyone is a
 * reader (machined applies the maintenance rules); with mTLS the roles are the client
 * certificate's O values, replaced by `talos-role` values only for peers holding os:impersonator;
 * without RBAC every authenticated caller holds every role.
 */
export function authenticatePeer(
  mode: ListenerMode,
  cert: PeerCertificate | undefined,
  assertedRoles: readonly string[],
  path: string,
): Caller {
  if (mode.kind === "maintenance") return { roles: [Role.reader], maintenance: true };
  if (!cert?.raw) throw unauthenticated("client certificate is required");
  if (mode.checkExtKeyUsage && !clientAuthOnly(cert)) {
    throw unauthenticated("client certificate must have extended key usage clientAuth only");
  }
  if (!mode.enableRbac) return { roles: [...allRoles] };
  let roles = normalizeRoles(organizations(cert));
  if (roles.includes(Role.impersonator)) {
    const asserted = normalizeRoles(assertedRoles);
    if (asserted.length > 0) roles = asserted;
  }
  // Refused at the door too, so a call this caller may not make is never forwarded to other nodes.
  if (!isAuthorized(path, roles)) throw permissionDenied("not authorized");
  return { roles };
}

function permissionDenied(details: string): grpc.ServiceError {
  return Object.assign(new Error(details), {
    code: grpc.status.PERMISSION_DENIED,
    details,
    metadata: new grpc.Metadata(),
  });
}
