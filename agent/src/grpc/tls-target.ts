// How our gRPC clients reach a node's apid over TLS: used by the client library
// and by apid itself when it forwards a call to another node.
import * as grpc from "@grpc/grpc-js";
import net from "node:net";
import tls, { type PeerCertificate } from "node:tls";
import { tlsKeyPem as tlsKey } from "../pki/tls.js";
import { splitHostPort } from "../sys/host-port.js";

/** How to reach a node: the maintenance (insecure) listener, or mTLS with a talosconfig's material. */
export type ClientCredentials =
  | { kind: "insecure" }
  | { kind: "mtls"; ca: string; crt: string; key: string; serverName?: string };

/** apid's port: where an endpoint that names none is reached. */
export const apidPort = 50000;

/**
 * Whether `address` names a port as Go's net.SplitHostPort reads one (`host:port`, `[host]:port`, an empty
 * port too), a bracketed host being an IP address: Talos's apid refuses such a target before it connects
 * (siderolabs/net AddressContainsPort). A bare IPv6 address names none.
 */
export function addressContainsPort(address: string): boolean {
  const colon = address.lastIndexOf(":");
  if (colon < 0) return false;
  if (address.startsWith("[")) {
    const end = address.indexOf("]");
    if (end + 1 !== colon || address.includes("[", 1) || address.includes("]", end + 1)) return false;
    const host = address.slice(1, end);
    return !host.includes(":") || net.isIP(host) === 6;
  }
  return !address.slice(0, colon).includes(":") && !/[[\]]/.test(address);
}

/** `endpoint` as host:port ([v6]:port), with apid's port unless it names one. */
export function withPort(endpoint: string): string {
  const { host, port } = splitHostPort(endpoint, apidPort);
  return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/**
 * SNI name sent when the node is addressed by IP: Node refuses an IP as TLS
 * ServerName (DEP0123) and grpc-js sends the target host unless overridden.
 * It names nothing (RFC 2606 `.invalid`); the identity check below ignores it.
 */
export const ipEndpointServerName = "node.basalt.invalid";

type MtlsCredentials = Extract<ClientCredentials, { kind: "mtls" }>;

/** The name the server certificate must hold: `serverName` when given, else the endpoint's host. */
function expectedIdentity(address: string, c: ClientCredentials): string {
  return (c.kind === "mtls" ? c.serverName : undefined) ?? splitHostPort(address, apidPort).host;
}

/** Checks the server certificate against our identity, whatever name went out as SNI. */
const identityCheck = (identity: string) => (_sni: string, cert: PeerCertificate) =>
  tls.checkServerIdentity(identity, cert);

/**
 * Channel credentials and options for `address`. With mTLS the chain is
 * verified against the talosconfig CA (grpc-js/Node default), and the server
 * certificate must name the endpoint (or `serverName`): an IP identity is
 * checked against the certificate's IP SANs by our checkServerIdentity, since
 * it cannot travel as the SNI name.
 */
export function tlsTarget(
  address: string,
  c: ClientCredentials,
): { creds: grpc.ChannelCredentials; options: grpc.ChannelOptions } {
  const identity = expectedIdentity(address, c);
  const options: grpc.ChannelOptions = {};
  if (net.isIP(identity)) options["grpc.ssl_target_name_override"] = ipEndpointServerName;
  else if (c.kind === "mtls" && c.serverName) options["grpc.ssl_target_name_override"] = c.serverName;
  if (c.kind === "insecure") {
    // Maintenance mode: TLS without verifying the server, exactly as `talosctl --insecure`.
    return {
      creds: grpc.credentials.createSsl(null, null, null, {
        rejectUnauthorized: false,
        checkServerIdentity: () => undefined,
      }),
      options,
    };
  }
  // grpc-js calls this with the override name; the identity checked is always ours.
  return {
    creds: grpc.credentials.createSsl(Buffer.from(c.ca), Buffer.from(tlsKey(c.key)), Buffer.from(c.crt), {
      checkServerIdentity: identityCheck(identity),
    }),
    options,
  };
}

/**
 * tls.connect options for `address` over mTLS, HTTP/2 by ALPN: the same checks as tlsTarget's channel
 * (chain against `ca`, the server certificate naming the endpoint or `serverName`, the same SNI name).
 */
export function tlsConnectOptions(
  address: string,
  c: MtlsCredentials,
): tls.ConnectionOptions & { host: string; port: number } {
  const identity = expectedIdentity(address, c);
  return {
    ...splitHostPort(address, apidPort),
    servername: net.isIP(identity) ? ipEndpointServerName : identity,
    ca: c.ca,
    cert: c.crt,
    key: tlsKey(c.key),
    ALPNProtocols: ["h2"],
    checkServerIdentity: identityCheck(identity),
  };
}
