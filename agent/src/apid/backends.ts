import tls from "node:tls";
import { tlsConnectOptions, withPort } from "../grpc/tls-target.js";
import { BackendSession } from "./raw-relay.js";

/** apid's own client identity for forwarding (ApiCertificates.client, O=os:impersonator). */
export interface ForwardingIdentity {
  crt: string;
  key: string;
  /** CAs the other nodes' server certificates are checked against (the accepted CAs). */
  acceptedCAs: string[];
}

// A node that went away is noticed while its calls are open, and the next call connects afresh (as grpc-js's channels did).
const keepalive = { timeMs: 30_000, timeoutMs: 10_000 };
// grpc-js's bound on one connection attempt: a node that accepts and never completes TLS fails its calls.
const connectTimeoutMs = 20_000;

/**
 * One HTTP/2 session per other node's apid, over mutual TLS, reused across calls. Sessions are made
 * with the forwarding identity in force when first used; a new identity (renewal, CA rotation) closes
 * them all so the next call connects with the new one.
 */
export class RemoteBackends {
  private identity: ForwardingIdentity | undefined;
  private readonly sessions = new Map<string, BackendSession>();

  /** Whether this apid can forward at all (workers have no client certificate). */
  get canForward(): boolean {
    return this.identity !== undefined;
  }

  setIdentity(identity: ForwardingIdentity | undefined): void {
    const same = identity && this.identity && identity.crt === this.identity.crt && identity.key === this.identity.key && identity.acceptedCAs.join() === this.identity.acceptedCAs.join();
    if (same) return;
    this.identity = identity;
    this.close();
  }

  /** The session to `target`'s apid (port 50000 unless the target names one); undefined without an identity. */
  session(target: string): BackendSession | undefined {
    if (!this.identity) return undefined;
    const address = withPort(target);
    let s = this.sessions.get(address);
    if (!s) {
      const { crt, key, acceptedCAs } = this.identity;
      const options = tlsConnectOptions(address, { kind: "mtls", ca: acceptedCAs.join("\n"), crt, key });
      s = new BackendSession(address, () => tls.connect(options), { authority: `https://${address}`, keepalive, connectTimeoutMs });
      this.sessions.set(address, s);
    }
    return s;
  }

  close(): void {
    for (const s of this.sessions.values()) s.close();
    this.sessions.clear();
  }
}
