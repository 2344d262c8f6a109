import * as grpc from "@grpc/grpc-js";
import { isIP } from "node:net";
import { checkServerIdentity, type PeerCertificate } from "node:tls";
import { serviceDefinition } from "../api/index.js";
import { apidPort } from "../grpc/tls-target.js";
import { splitHostPort } from "../sys/host-port.js";
import type { TrustdAttempt } from "../controllers/secrets/trustd-request.js";
import { tokenKey } from "./service.js";

// Node refuses an IP as TLS ServerName (DEP0123) and grpc-js sends the target
// host unless told otherwise: an IP endpoint sends this name, which names nothing
// (RFC 2606), and the certificate is checked against the IP itself below.
const ipServerName = "trustd.basalt.invalid";

/**
 * One Certificate call to trustd at `endpoint` (host:port): server-only TLS
 * verified against the OS CA certificate of this node's config, the machine
 * token in `token` metadata, ended by `signal` (the attempt's deadline).
 */
export const callTrustd: TrustdAttempt = async (endpoint, req, signal) => {
  const { host } = splitHostPort(endpoint, apidPort);
  const options: grpc.ChannelOptions = isIP(host) ? { "grpc.ssl_target_name_override": ipServerName } : {};
  const creds = grpc.credentials.createSsl(Buffer.from(req.caPem), null, null, {
    checkServerIdentity: (_name: string, cert: PeerCertificate) => checkServerIdentity(host, cert),
  });
  const Security = grpc.makeGenericClientConstructor(
    serviceDefinition("securityapi.SecurityService"),
    "SecurityService",
  );
  const client = new Security(endpoint, creds, options);
  try {
    return await new Promise<{ ca: string; crt: string }>((resolve, reject) => {
      const md = new grpc.Metadata();
      if (req.token) md.set(tokenKey, req.token);
      // The generic constructor's methods are untyped; this is the unary Certificate call.
      const call = (
        client as unknown as Record<
          string,
          (
            r: object,
            md: grpc.Metadata,
            cb: (e: grpc.ServiceError | null, r?: { ca?: Buffer; crt?: Buffer }) => void,
          ) => grpc.ClientUnaryCall
        >
      )["Certificate"]!({ csr: Buffer.from(req.csrPem) }, md, (err, res) =>
        err ? reject(err) : resolve({ ca: res?.ca?.toString("utf8") ?? "", crt: res?.crt?.toString("utf8") ?? "" }),
      );
      if (signal.aborted) call.cancel();
      else signal.addEventListener("abort", () => call.cancel(), { once: true });
    });
  } finally {
    client.close();
  }
};
