// k8s.KubePrismController: runs KubePrism, the node-local TCP load balancer in front of
// the API servers, while KubePrismConfig exists (restarted when its address changes,
// upstreams updated in place otherwise), and publishes KubePrismStatuses
// `k8s-loadbalancer` (`host` the listen address, `healthy` while some upstream can take
// a connection), re-read every 5 s as Talos does.

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  K8S_NAMESPACE,
  KubePrismConfigId,
  KubePrismConfigType,
  KubePrismStatusesId,
  KubePrismStatusesType,
  type KubePrismConfigSpec,
  type KubePrismStatusesSpec,
} from "../../resources/catalog/k8s-kubelet.js";
import { TcpLoadBalancer, type LoadBalancerOptions } from "../../network/tcp-load-balancer.js";
import { joinHostPort } from "../../sys/host-port.js";

/** Talos's KubePrism constants. */
export const kubePrismTimings: LoadBalancerOptions & { statusIntervalMs: number } = {
  dialTimeoutMs: 15_000,
  keepAliveMs: 30_000,
  healthCheckIntervalMs: 20_000,
  healthCheckTimeoutMs: 15_000,
  statusIntervalMs: 5_000,
};

export class KubePrismController implements Controller {
  readonly name = "k8s.KubePrismController";
  readonly inputs = [
    { namespace: K8S_NAMESPACE, type: KubePrismConfigType, id: KubePrismConfigId, kind: "weak" as const },
  ];
  readonly outputs = [{ type: KubePrismStatusesType }];
  private balancer: TcpLoadBalancer | undefined;
  private stopOnAbort = false;

  constructor(private readonly timings: typeof kubePrismTimings = kubePrismTimings) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    this.closeOnAbort(ctx.signal);
    const cfg = ctx.get<KubePrismConfigSpec>(K8S_NAMESPACE, KubePrismConfigType, KubePrismConfigId)?.spec;
    const endpoint = cfg ? joinHostPort(cfg.host, cfg.port) : undefined;
    if (this.balancer && this.balancer.endpoint !== endpoint) await this.stop(ctx);
    if (cfg && endpoint) {
      const balancer = this.balancer ?? (await this.start(ctx, endpoint));
      balancer.setUpstreams(cfg.endpoints.map((e) => joinHostPort(e.host, e.port)));
    }
    this.writeStatus(ctx);
    if (this.balancer) ctx.requeueAfter(this.timings.statusIntervalMs);
  }

  private async start(ctx: ControllerContext, endpoint: string): Promise<TcpLoadBalancer> {
    const balancer = new TcpLoadBalancer(endpoint, { ...this.timings, log: ctx.log.atLeast("error") });
    await balancer.start();
    this.balancer = balancer;
    ctx.log.info("KubePrism is enabled", { endpoint });
    return balancer;
  }

  private async stop(ctx: ControllerContext): Promise<void> {
    const balancer = this.balancer;
    this.balancer = undefined;
    await balancer?.close();
    ctx.log.info("KubePrism is disabled");
  }

  private writeStatus(ctx: ControllerContext): void {
    const b = this.balancer;
    if (!b) {
      ctx.destroyOthers(K8S_NAMESPACE, KubePrismStatusesType, new Set());
      return;
    }
    const spec: KubePrismStatusesSpec = { host: b.endpoint, healthy: b.healthy() };
    ctx.modify<KubePrismStatusesSpec>(K8S_NAMESPACE, KubePrismStatusesType, KubePrismStatusesId, () => spec);
    ctx.destroyOthers(K8S_NAMESPACE, KubePrismStatusesType, new Set([KubePrismStatusesId]));
  }

  /** The balancer is machined's to close when the controllers stop. */
  private closeOnAbort(signal: AbortSignal): void {
    if (this.stopOnAbort) return;
    this.stopOnAbort = true;
    signal.addEventListener("abort", () => void this.balancer?.close(), { once: true });
  }
}
