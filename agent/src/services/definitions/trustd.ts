import { InProcessRunner } from "../inprocess-runner.js";
import { pollUntilReady, tcpProbe } from "../readiness.js";
import type { ServiceDefinition } from "../service.js";

export interface TrustdServiceOptions {
  /** host:port trustd listens on (0.0.0.0:50001 on a node). */
  listen: string;
  /** trustd itself, run in machined's process until `signal` aborts (trustd/trustd.ts). */
  run(signal: AbortSignal): Promise<void>;
}

/**
 * trustd, on control-plane nodes only, served inside machined's process (one Node runtime
 * less: docs/decisions/0001-trustd-inside-machined.md): ready and healthy once its TCP listener accepts
 * connections, which it opens when its certificate (TrustdCertificates) is published,
 * however long that takes; a stop closes the listener.
 */
export function trustdService(opts: TrustdServiceOptions): ServiceDefinition {
  const health = () => tcpProbe(opts.listen, "trustd");
  const runner = new InProcessRunner({
    id: "trustd",
    run: opts.run,
    ready: (signal) => pollUntilReady(health, signal),
    health,
  });
  // Talos refuses ServiceStart/Stop/Restart for trustd; here it allows them (its clients retry, nothing is lost), so a user can restart it.
  return {
    id: "trustd",
    restart: "always",
    runner,
    oomScoreAdj: -998,
    api: { start: true, stop: true, restart: true },
  };
}
