import { ProcessRunner, type ProcessSpec } from "../process-runner.js";
import { pollUntilReady, tcpProbe } from "../readiness.js";
import type { ServiceDefinition } from "../service.js";

export interface TrustdServiceOptions {
  /** host:port trustd listens on (0.0.0.0:50001 on a node). */
  listen: string;
  /** How to start the trustd process (the multi-call program run as `trustd`), and as whom. */
  process: Omit<ProcessSpec, "id" | "ready" | "health">;
}

/** Talos runs trustd as this unprivileged user and group. */
export const trustdUser = { uid: 51, gid: 51 };

/**
 * trustd, on control-plane nodes only (its certificate and secrets come from
 * machined's trustd runtime socket, so it can run as trustdUser): ready and healthy once its TCP listener
 * accepts connections, which it opens when its certificate (TrustdCertificates)
 * is published, however long that takes.
 */
export function trustdService(opts: TrustdServiceOptions): ServiceDefinition {
  const health = () => tcpProbe(opts.listen, "trustd");
  const runner = new ProcessRunner({ ...opts.process, id: "trustd", ready: (signal) => pollUntilReady(health, signal), health });
  // Talos refuses ServiceStart/Stop/Restart for trustd; here it allows them (its clients retry, nothing is lost), so a user can restart it.
  return { id: "trustd", restart: "always", runner, oomScoreAdj: -998, api: { start: true, stop: true, restart: true } };
}
