import net from "node:net";
import tls from "node:tls";
import { tlsConnectOptions, withPort } from "../grpc/tls-target.js";
import { BackendSession, type BackendSessionOptions } from "./backend-session.js";

/** apid's own client identity for forwarding (ApiCertificates.client, O=os:impersonator). */
export interface ForwardingIdentity {
  crt: string;
  key: string;
  /** CAs the other nodes' server certificates are checked against (the accepted CAs). */
  acceptedCAs: string[];
}

/** How the sessions to other nodes' apid are kept: a session's options but its authority (each node's own), connecting bounded. */
export type RemoteSessionOptions = Omit<BackendSessionOptions, "authority"> & { connectTimeoutMs: number };

/**
 * As Talos's apid dials other nodes' apid (internal/app/apid/pkg/backend/apid.go, grpc-go 1.63): no keepalive
 * parameters, so no HTTP/2 pings at all, and a connection attempt bounded at 20 s (MinConnectTimeout). Its
 * apid serves with grpc-go's default enforcement (pkg/grpc/factory sets none): a client pinging less than
 * 5 minutes after its last ping, three times running while the server has sent nothing, gets GOAWAY
 * ENHANCE_YOUR_CALM "too_many_pings" and loses the connection with every call on it (a quiet `logs -f`).
 * A node that went away is noticed by TCP keepalive, on as grpc-go's dialer turns it on (see `connectTo`).
 * Receive windows as Talos's dial sets them: 2 MiB per stream, 1 MiB for the connection (Node's are 64 KiB); a
 * connection with no call for 15 minutes is closed (its idle timeout, half its 30-minute GracefulShutdownTimeout).
 */
export const remoteSessionOptions: RemoteSessionOptions = {
  connectTimeoutMs: 20_000,
  windows: { stream: 65535 * 32, session: 65535 * 16 },
  idleTimeoutMs: 15 * 60_000,
};

/**
 * A TLS connection over a TCP socket with SO_KEEPALIVE and the kernel's own times (net.ipv4.tcp_keepalive_*:
 * on a node 600 s idle, then 9 probes 60 s apart, as Talos sets them), as grpc-go's dialer makes it.
 * (tls.connect's own socket would get no keepalive; setKeepAlive would set libuv's times, not the kernel's.)
 */
function connectTo(options: tls.ConnectionOptions & { host: string; port: number }): tls.TLSSocket {
  return tls.connect({ ...options, socket: net.connect({ host: options.host, port: options.port, keepAlive: true }) });
}

/**
 * One HTTP/2 session per other node's apid, over mutual TLS, reused across calls. Sessions are made
 * with the forwarding identity in force when first used; a new identity (renewal, CA rotation) closes
 * them all so the next call connects with the new one.
 */
export class RemoteBackends {
  private identity: ForwardingIdentity | undefined;
  private readonly sessions = new Map<string, BackendSession>();

  constructor(private readonly options: RemoteSessionOptions = remoteSessionOptions) {}

  /** Whether this apid can forward at all (workers have no client certificate). */
  get canForward(): boolean {
    return this.identity !== undefined;
  }

  setIdentity(identity: ForwardingIdentity | undefined): void {
    const same =
      identity &&
      this.identity &&
      identity.crt === this.identity.crt &&
      identity.key === this.identity.key &&
      identity.acceptedCAs.join() === this.identity.acceptedCAs.join();
    if (same) return;
    this.identity = identity;
    this.close();
  }

  /** The session to `target`'s apid on port 50000 (the director refuses a target naming a port); undefined without an identity. */
  session(target: string): BackendSession | undefined {
    if (!this.identity) return undefined;
    const address = withPort(target);
    let s = this.sessions.get(address);
    if (!s) {
      const { crt, key, acceptedCAs } = this.identity;
      const options = tlsConnectOptions(address, { kind: "mtls", ca: acceptedCAs.join("\n"), crt, key });
      s = new BackendSession(address, () => connectTo(options), { ...this.options, authority: `https://${address}` });
      this.sessions.set(address, s);
    }
    return s;
  }

  close(): void {
    for (const s of this.sessions.values()) s.close();
    this.sessions.clear();
  }
}
