// How a control-plane node's etcd joins a running cluster, as Talos's etcd service does: it
// adds itself as a learner through any control-plane member (first removing a member of the
// same name or peer URLs: a node that lost its data, or an earlier attempt), starts with the
// member list as its initial cluster, then is promoted once it has caught up. While no member
// answers, the console says to run `talosctl bootstrap`.
import { setTimeout as sleep } from "node:timers/promises";
import { describeError } from "../../errors.js";
import type { Logger } from "../../log.js";
import { firstAnswering, type EtcdClientOptions, type EtcdTls } from "../../sys/etcd/client.js";
import { clusterURLs } from "./etcd-args.js";

export interface EtcdCluster {
  /** The control plane's etcd client endpoints (host:port); Talos takes them from its Endpoints resources. */
  endpoints(): Promise<string[]>;
  /** The admin client credentials. */
  tls(): Promise<EtcdTls>;
  /** The node's current addresses, for the console's bootstrap hint. */
  addresses(): string[];
}

export interface JoinTiming {
  /** Between attempts (Talos: 3 s plus up to 1 s of jitter). */
  retryMs: number;
  /** How often the bootstrap hint is repeated (Talos: 30 s). */
  nagMs: number;
  /** Give up after (Talos's EtcdJoinTimeout: 30 min). */
  timeoutMs: number;
  /** Between promotion attempts (Talos: 15 s, for up to 10 min). */
  promoteRetryMs: number;
  promoteTimeoutMs: number;
}
export const talosJoinTiming: JoinTiming = {
  retryMs: 3000,
  nagMs: 30_000,
  timeoutMs: 30 * 60_000,
  promoteRetryMs: 15_000,
  promoteTimeoutMs: 10 * 60_000,
};

const clientOpts: EtcdClientOptions = { requireLeader: true, callTimeoutMs: 30_000 };

/** Talos's console line while no member answers (log.Printf in buildInitialCluster). */
export const bootstrapHint =
  "etcd is waiting to join the cluster, if this node is the first node in the cluster, please run `talosctl bootstrap` against one of the following IPs:";

/** Adds this node as a learner; returns its initial-cluster flag and the learner's ID. */
async function addLearner(
  cluster: EtcdCluster,
  name: string,
  peerURLs: string[],
): Promise<{ initialCluster: string; learnerId: bigint }> {
  const endpoints = await cluster.endpoints();
  return firstAnswering(endpoints, await cluster.tls(), clientOpts, async (c) => {
    const { members } = await c.memberList();
    // A member of this name is this node before it lost its data. One with its peer URLs but no name yet
    // is a learner an earlier attempt added, whose answer was lost: etcd refuses to add its URLs again.
    const ours = members.filter((m) => m.name === name || m.peerURLs.some((u) => peerURLs.includes(u)));
    for (const m of ours) await c.memberRemove(m.id);
    const added = await c.memberAdd(peerURLs, true);
    const list = await c.memberList();
    const initialCluster = list.members
      .flatMap((m) => m.peerURLs.map((u) => clusterURLs(m.id === added.member.id ? name : m.name, [u])))
      .join(",");
    return { initialCluster, learnerId: added.member.id };
  });
}

/** Retries adding the learner until a member answers; the hint goes to the console meanwhile. */
export async function joinCluster(
  cluster: EtcdCluster,
  name: string,
  peerURLs: string[],
  log: Logger,
  signal: AbortSignal,
  timing = talosJoinTiming,
) {
  const deadline = Date.now() + timing.timeoutMs;
  let lastNag = 0;
  for (;;) {
    signal.throwIfAborted();
    if (Date.now() - lastNag > timing.nagMs) {
      lastNag = Date.now();
      log.info(bootstrapHint);
      log.info(`[${cluster.addresses().join(" ")}]`);
    }
    try {
      return await addLearner(cluster, name, peerURLs);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      log.debug("joining the etcd cluster failed; retrying", { error: describeError(err) });
    }
    await sleep(timing.retryMs + Math.random() * Math.min(1000, timing.retryMs), undefined, { signal });
  }
}

/** Promotes the learner through whichever member answers, until it succeeds (it fails until the learner caught up). */
export async function promoteLearner(
  cluster: EtcdCluster,
  id: bigint,
  log: Logger,
  signal: AbortSignal,
  timing = talosJoinTiming,
): Promise<void> {
  const deadline = Date.now() + timing.promoteTimeoutMs;
  for (;;) {
    signal.throwIfAborted();
    try {
      // Each endpoint in turn: the learner itself can never promote itself.
      for (const endpoint of await cluster.endpoints()) {
        try {
          await firstAnswering([endpoint], await cluster.tls(), clientOpts, (c) => c.memberPromote(id));
          log.info("successfully promoted etcd member");
          return;
        } catch (err) {
          if (Date.now() > deadline) throw err;
        }
      }
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    await sleep(timing.promoteRetryMs, undefined, { signal });
  }
}
