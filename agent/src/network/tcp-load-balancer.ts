// A TCP load balancer with health-checked upstreams, behaving as siderolabs/go-loadbalancer
// v0.3 (which Talos's KubePrism runs): each upstream has a score (starts at 1, +1 per
// successful probe or -1 per failed probe or failed dial, kept within [-3, 3]) and a
// latency tier (0-5 from how long its last successful probe's dial took: under 0.1 ms,
// 1 ms, 10 ms, 100 ms, 1 s, or longer; starts at 1). A connection goes to the next
// upstream round-robin in the lowest tier that has one with a score of at least 0;
// with none, it is closed. Probes are TCP dials, every upstream in turn, at once and
// then every interval.

import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { BasaltError, describeError } from "../errors.js";
import { splitHostPort } from "../sys/host-port.js";
import { type Logger, logger } from "../log.js";

/** The balancer could not listen. */
export class LoadBalancerListenError extends BasaltError {}

export interface LoadBalancerOptions {
  /** Limit on dialing an upstream for a connection (Talos's KubePrism: 15 s). */
  dialTimeoutMs: number;
  /** TCP keepalive on both sides (KubePrism: 30 s). */
  keepAliveMs: number;
  /** Between two rounds of probes (KubePrism: 20 s). */
  healthCheckIntervalMs: number;
  /** Limit on one probe's dial (KubePrism: 15 s). */
  healthCheckTimeoutMs: number;
  /** Where its warnings go; KubePrism keeps only errors, as every connection before the API server is up warns. */
  log?: Logger;
}

interface Upstream {
  address: string;
  score: number;
  tier: number;
}

const score = { low: -3, high: 3, fail: -1, success: 1, initial: 1 } as const;
const tiers = { min: 0, max: 5, initial: 1 } as const;
/** The least probe latency (ms) of each tier. */
const tierFloorsMs = [0, 0.1, 1, 10, 100, 1000];

export function tierOf(elapsedMs: number): number {
  for (let i = tierFloorsMs.length - 1; i >= 0; i--) if (elapsedMs >= tierFloorsMs[i]!) return i;
  return tierFloorsMs.length;
}

/** Opens a TCP connection within `timeoutMs`; rejects on error or timeout. */
function dial(address: string, timeoutMs: number): Promise<net.Socket> {
  const { host, port } = splitHostPort(address);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`dial tcp ${address}: i/o timeout`));
    }, timeoutMs);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.removeAllListeners("error");
      resolve(socket);
    });
    socket.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** The upstreams of one route and their health. */
export class UpstreamList {
  private nodes: Upstream[] = [];
  private current = -1;

  /** Keeps the upstreams still listed (with their health), adds new ones fresh, drops the rest. */
  reconcile(addresses: readonly string[]): void {
    const toAdd = [...addresses];
    this.nodes = this.nodes.filter((n) => {
      const at = toAdd.indexOf(n.address);
      if (at < 0) return false;
      toAdd.splice(at, 1);
      return true;
    });
    for (const address of toAdd) this.nodes.push({ address, score: score.initial, tier: tiers.initial });
  }

  addresses(): string[] {
    return this.nodes.map((n) => n.address);
  }

  up(address: string, tier?: number): void {
    for (const n of this.nodes.filter((x) => x.address === address)) {
      n.score = Math.min(n.score + score.success, score.high);
      if (tier !== undefined) n.tier = Math.min(Math.max(tier, tiers.min), tiers.max);
    }
  }

  down(address: string): void {
    for (const n of this.nodes.filter((x) => x.address === address))
      n.score = Math.max(n.score + score.fail, score.low);
  }

  /** The index of the next usable upstream, or -1. */
  private next(): number {
    for (let tier = tiers.min; tier <= tiers.max; tier++) {
      for (let j = 0; j < this.nodes.length; j++) {
        const i = (this.current + 1 + j) % this.nodes.length;
        const n = this.nodes[i]!;
        if (n.tier === tier && n.score >= 0) return i;
      }
    }
    return -1;
  }

  /** The upstream the next connection goes to (advancing the round-robin), or undefined. */
  pick(): string | undefined {
    const i = this.next();
    if (i < 0) return undefined;
    this.current = i;
    return this.nodes[i]!.address;
  }

  /** Whether a connection would find an upstream now (Talos's IsRouteHealthy, without moving the round-robin). */
  healthy(): boolean {
    return this.next() >= 0;
  }
}

export class TcpLoadBalancer {
  readonly upstreams = new UpstreamList();
  private server: net.Server | undefined;
  private readonly stopProbes = new AbortController();
  private readonly log: Logger;

  constructor(
    /** Where it listens ("127.0.0.1:7445"). */
    readonly endpoint: string,
    private readonly opts: LoadBalancerOptions,
  ) {
    this.log = (opts.log ?? logger("loadbalancer")).child({ endpoint });
  }

  /** Listens, and starts probing the upstreams. */
  async start(): Promise<void> {
    const { host, port } = splitHostPort(this.endpoint);
    const server = net.createServer((conn) => void this.handle(conn));
    await new Promise<void>((resolve, reject) => {
      server.once("error", (err) =>
        reject(
          new LoadBalancerListenError(
            `listen tcp ${this.endpoint}: ${err.message}`,
            { endpoint: this.endpoint },
            { cause: err },
          ),
        ),
      );
      server.listen({ host, port }, () => resolve());
    });
    server.on("error", (err) => this.log.warn("listener error", { error: err.message }));
    this.server = server;
    void this.probeLoop(this.stopProbes.signal);
  }

  setUpstreams(addresses: readonly string[]): void {
    this.upstreams.reconcile(addresses);
  }

  healthy(): boolean {
    return this.upstreams.healthy();
  }

  /** Stops listening and probing; connections already proxied run on until either side closes. */
  async close(): Promise<void> {
    this.stopProbes.abort();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(conn: net.Socket): Promise<void> {
    conn.on("error", () => conn.destroy());
    const upstream = this.upstreams.pick();
    if (!upstream) {
      this.log.warn("no upstreams available, closing connection", { remote: conn.remoteAddress });
      conn.destroy();
      return;
    }
    let target: net.Socket;
    try {
      target = await dial(upstream, this.opts.dialTimeoutMs);
    } catch (err) {
      this.log.warn("error dialing upstream", { upstream, error: describeError(err) });
      this.upstreams.down(upstream);
      conn.destroy();
      return;
    }
    conn.setKeepAlive(true, this.opts.keepAliveMs);
    target.setKeepAlive(true, this.opts.keepAliveMs);
    // Each side's end is passed on by the pipes (half-close); an error on either resets both.
    target.on("error", () => conn.destroy());
    conn.on("close", (hadError) => hadError && target.destroy());
    target.on("close", (hadError) => hadError && conn.destroy());
    conn.pipe(target);
    target.pipe(conn);
  }

  private async probe(address: string, signal: AbortSignal): Promise<void> {
    const start = performance.now();
    try {
      const socket = await dial(address, this.opts.healthCheckTimeoutMs);
      const elapsed = performance.now() - start;
      socket.destroy();
      if (!signal.aborted) this.upstreams.up(address, tierOf(elapsed));
    } catch (err) {
      this.log.warn("healthcheck failed", { address, error: describeError(err) });
      if (!signal.aborted) this.upstreams.down(address);
    }
  }

  private async probeLoop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      for (const address of this.upstreams.addresses()) {
        if (signal.aborted) return;
        await this.probe(address, signal);
      }
      await sleep(this.opts.healthCheckIntervalMs, undefined, { signal }).catch(() => undefined);
    }
  }
}
