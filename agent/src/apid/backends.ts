import * as grpc from "@grpc/grpc-js";
import { tlsTarget, withPort } from "../grpc/tls-target.js";
import { messageSizeOptions } from "../grpc/limits.js";

/** apid's own client identity for forwarding (ApiCertificates.client, O=os:impersonator). */
export interface ForwardingIdentity {
  crt: string;
  key: string;
  /** CAs the other nodes' server certificates are checked against (the accepted CAs). */
  acceptedCAs: string[];
}

const channelOptions: grpc.ChannelOptions = {
  ...messageSizeOptions,
  // A node that went away is noticed while idle too, and its channel reconnects on the next call.
  "grpc.keepalive_time_ms": 30_000,
  "grpc.keepalive_timeout_ms": 10_000,
};

/**
 * One channel per other node, reused across calls. Channels are built with the
 * forwarding identity in force when first used; a new identity (renewal, CA
 * rotation) closes them all so the next call connects with the new one.
 */
export class RemoteBackends {
  private identity: ForwardingIdentity | undefined;
  private readonly clients = new Map<string, grpc.Client>();

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

  /** The channel to `target`'s apid (port 50000 unless the target names one); undefined without an identity. */
  client(target: string): grpc.Client | undefined {
    if (!this.identity) return undefined;
    const address = withPort(target);
    let c = this.clients.get(address);
    if (!c) {
      const { crt, key, acceptedCAs } = this.identity;
      const t = tlsTarget(address, { kind: "mtls", ca: acceptedCAs.join("\n"), crt, key });
      c = new grpc.Client(address, t.creds, { ...t.options, ...channelOptions });
      this.clients.set(address, c);
    }
    return c;
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}
