import * as grpc from "@grpc/grpc-js";
import { NotFoundError } from "../errors.js";
import type { CallGuard, ServiceImpl, SurfaceCall } from "../grpc/server.js";
import type { Logger } from "../log.js";
import type { OSRootSpec } from "../resources/catalog/secrets.js";
import { TokenRejectedError, tokenMatches } from "./token.js";

export const tokenKey = "token";

/** The OS root secrets as trustd last saw them; undefined until machined has published them. */
export type RootSource = () => Pick<OSRootSpec, "issuingCA" | "acceptedCAs" | "token"> | undefined;

/** Refuses every call whose `token` metadata is not the machine token, and logs who tried. */
export function tokenGuard(root: RootSource, log: Logger): CallGuard {
  return (path: string, call: SurfaceCall) => {
    const presented = call.metadata.get(tokenKey).map(String);
    if (tokenMatches(root()?.token ?? "", presented)) return;
    log.warn("refused a call without the machine token", {
      path,
      peer: call.getPeer(),
      token: presented.length ? "wrong" : "missing",
    });
    throw new TokenRejectedError({ peer: call.getPeer() });
  };
}

/** `securityapi.SecurityService`: Certificate signs a worker's CSR with the OS CA. */
export function securityServiceImpl(root: RootSource, log: Logger): ServiceImpl {
  return {
    async Certificate(
      call: grpc.ServerUnaryCall<{ csr?: Buffer }, unknown>,
      callback: grpc.sendUnaryData<unknown>,
    ): Promise<void> {
      const spec = root();
      if (!spec) throw new NotFoundError("the OS root secrets are not published yet");
      // Signing loads @peculiar/x509: on a control plane's first CSR, not on every machined start.
      const { SigningFailedError, signWorkerCSR } = await import("./sign.js");
      try {
        const signed = await signWorkerCSR(spec, Buffer.from(call.request.csr ?? Buffer.alloc(0)));
        log.info("signed a CSR", { peer: call.getPeer(), ...signed.issued });
        callback(null, { ca: Buffer.from(signed.ca), crt: Buffer.from(signed.crt) });
      } catch (err) {
        if (!(err instanceof SigningFailedError)) throw err;
        log.error("signing a CSR failed", { peer: call.getPeer(), error: err.message });
        // trustd's API edge: Talos answers a signing failure with Internal, a code none of our error classes carry.
        throw Object.assign(new Error(err.message), { code: grpc.status.INTERNAL, details: err.message });
      }
    },
  };
}
