import {
  ApiCertificatesId,
  ApiCertificatesType,
  MaintenanceServiceCertificatesId,
  MaintenanceServiceCertificatesType,
  SECRETS_NAMESPACE,
} from "../../resources/catalog/secrets.js";
import type { ResourceState } from "../../resources/state.js";
import { resourceExists } from "../conditions.js";
import { InProcessRunner } from "../inprocess-runner.js";
import { ProcessRunner, type ProcessSpec } from "../process-runner.js";
import { pollUntilReady, tcpProbe } from "../readiness.js";
import type { ServiceDefinition } from "../service.js";

export interface ApidServiceOptions {
  state: ResourceState;
  /** host:port apid listens on (0.0.0.0:50000 on a node). */
  listen: string;
  /** In maintenance mode apid serves with the maintenance certificate, else with the API certificates. */
  maintenance: boolean;
  /** Its own process (the multi-call program run as `apid`), or a task in machined's process (one Node runtime less). */
  run: { process: Omit<ProcessSpec, "id" | "ready" | "health"> } | { inProcess(signal: AbortSignal): Promise<void> };
}

/**
 * apid: waits for its certificate as Talos's apid waits for the API certificates (in maintenance
 * mode the maintenance one); ready, and healthy, once its TCP listener accepts connections.
 */
export function apidService(opts: ApidServiceOptions): ServiceDefinition {
  const health = () => tcpProbe(opts.listen, "apid");
  const ready = (signal: AbortSignal) => pollUntilReady(health, signal);
  const certificate = opts.maintenance
    ? resourceExists(
        opts.state,
        SECRETS_NAMESPACE,
        MaintenanceServiceCertificatesType,
        MaintenanceServiceCertificatesId,
        undefined,
        "maintenance service certificates",
      )
    : resourceExists(
        opts.state,
        SECRETS_NAMESPACE,
        ApiCertificatesType,
        ApiCertificatesId,
        undefined,
        "api certificates",
      );
  const runner =
    "inProcess" in opts.run
      ? new InProcessRunner({ id: "apid", run: opts.run.inProcess, ready, health })
      : new ProcessRunner({ ...opts.run.process, id: "apid", ready, health });
  return { id: "apid", dependsOn: [], conditions: [certificate], runner, restart: "always", oomScoreAdj: -998 };
}
