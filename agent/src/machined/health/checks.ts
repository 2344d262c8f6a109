// The cluster health checks of `talosctl health` (Talos v1.7.6 pkg/cluster/check,
// DefaultClusterChecks): each a polling condition with Talos's description, timeout
// and interval, whose state reads "<description>: ..." until the first attempt,
// then "OK", "SKIP" or the last error, written with Talos's error texts.

import { DeadlineExceededError } from "../../errors.js";
import type { KubernetesObject } from "../../resources/catalog/k8s-manifests.js";

export interface NodeInfo {
  internalIP: string;
  ips: string[];
}

export type NodeType = "init" | "controlplane" | "worker";

export interface ClusterInfo {
  nodes(): NodeInfo[];
  nodesByType(t: NodeType): NodeInfo[];
}

/** machine.ServiceInfo as a node reports it. */
export interface ServiceReport {
  hostname: string;
  events: { state: string; msg: string }[];
  healthy: boolean;
}

export interface EtcdMemberReport {
  hostname: string;
  id: string;
  isLearner: boolean;
  peerUrls: string[];
}

/** What the checks ask the nodes, one node at a time (Talos: its API client with `nodes`). */
export interface NodeReader {
  /** The service on that node; undefined when it has none. */
  service(node: string, id: string, signal: AbortSignal): Promise<ServiceReport | undefined>;
  etcdMembers(node: string, signal: AbortSignal): Promise<{ hostname: string; members: EtcdMemberReport[] }>;
  /** Version's platform mode ("container", "metal", ...). */
  platformMode(node: string, signal: AbortSignal): Promise<string>;
  memoryTotalKiB(node: string, signal: AbortSignal): Promise<number>;
  /** The EPHEMERAL mount's source and the size of the filesystem mounted from it; undefined without one. */
  ephemeral(node: string, signal: AbortSignal): Promise<{ source: string; sizeBytes: number | undefined } | undefined>;
  /** MachineStatus's stage ("running", "booting", ...). */
  machineStage(node: string, signal: AbortSignal): Promise<string>;
  /** StaticPodStatus ids ("kube-system/kube-apiserver-<node>", ...). */
  staticPodIds(node: string, signal: AbortSignal): Promise<string[]>;
}

/** The Kubernetes API reads the checks make (lists, optionally by label selector). */
export interface KubeReader {
  list(path: string, labelSelector?: string, signal?: AbortSignal): Promise<KubernetesObject[]>;
  /** Releases its connections once the checks are done. */
  close?(): void;
}

export interface CheckContext {
  cluster: ClusterInfo;
  nodes: NodeReader;
  kube: () => Promise<KubeReader>;
}

/** Talos's ErrSkipAssertion: the check does not apply (shown as SKIP). */
export const SKIP = "SKIP";
class SkipAssertion extends Error {
  constructor() {
    super(SKIP);
  }
}

export interface HealthCheck {
  description: string;
  timeoutMs: number;
  intervalMs: number;
  assertion(ctx: CheckContext, signal: AbortSignal): Promise<void>;
}

/** Go's hashicorp/go-multierror text. */
export function multiError(errors: string[]): Error | undefined {
  if (errors.length === 0) return undefined;
  if (errors.length === 1) return new Error(`1 error occurred:\n\t* ${errors[0]}\n\n`);
  return new Error(`${errors.length} errors occurred:\n\t${errors.map((e) => `* ${e}`).join("\n\t")}\n\n`);
}

/** Go's %q of a string list: ["a" "b"]. */
export const goQuoted = (xs: readonly string[]): string => `[${xs.map((x) => JSON.stringify(x)).join(" ")}]`;
/** Go's %v of a string list: [a b]. */
const goList = (xs: readonly string[]): string => `[${xs.join(" ")}]`;

const controlPlanes = (c: ClusterInfo): NodeInfo[] => [...c.nodesByType("init"), ...c.nodesByType("controlplane")];

async function serviceHealthy(
  ctx: CheckContext,
  service: string,
  nodes: NodeInfo[],
  signal: AbortSignal,
): Promise<void> {
  const reports = (await Promise.all(nodes.map((n) => ctx.nodes.service(n.internalIP, service, signal)))).filter(
    (r): r is ServiceReport => r !== undefined,
  );
  if (reports.length !== nodes.length)
    throw new Error(`expected a response with ${nodes.length} node(s), got ${reports.length}`);
  const errors: string[] = [];
  for (const r of reports.sort((a, b) => (a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0))) {
    const last = r.events.at(-1);
    if (!last) errors.push(`${r.hostname}: no events recorded yet for service ${JSON.stringify(service)}`);
    else if (last.state !== "Running")
      errors.push(
        `${r.hostname}: service ${JSON.stringify(service)} not in expected state "Running": current state [${last.state}] ${last.msg}`,
      );
    else if (!r.healthy) errors.push(`${r.hostname}: service is not healthy: ${service}`);
  }
  const err = multiError(errors);
  if (err) throw err;
}

async function etcdConsistent(ctx: CheckContext, signal: AbortSignal): Promise<void> {
  const lists = await Promise.all(controlPlanes(ctx.cluster).map((n) => ctx.nodes.etcdMembers(n.internalIP, signal)));
  if (lists.length === 0) throw new Error("no messages returned");
  lists.sort((a, b) => (a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0));
  const key = (m: EtcdMemberReport): string => `${m.hostname}\0${m.id}\0${m.isLearner}`;
  const known = new Map(lists[0]!.members.map((m) => [key(m), m.hostname]));
  for (const l of lists.slice(1)) {
    if (l.members.length !== known.size)
      throw new Error(
        `${l.hostname}: expected to have ${goList([...known.values()])} members, got ${goList(l.members.map((m) => m.hostname))}`,
      );
    for (const m of l.members)
      if (!known.has(key(m))) throw new Error(`${l.hostname}: found unexpected etcd member ${m.hostname}`);
  }
}

async function etcdOnControlPlanes(ctx: CheckContext, signal: AbortSignal): Promise<void> {
  const nodes = controlPlanes(ctx.cluster);
  // Talos asks the node it is connected to (no `nodes`): the first control plane here.
  const first = nodes[0];
  if (!first) throw new Error("no control plane nodes");
  const { members } = await ctx.nodes.etcdMembers(first.internalIP, signal);
  const memberIPs = members.flatMap((m) => m.peerUrls.map((u) => new URL(u).hostname.replace(/^\[|\]$/g, "")));
  const cpIPs = nodes.flatMap((n) => n.ips);
  if (!memberIPs.every((ip) => cpIPs.includes(ip)))
    throw new Error(
      `etcd member ips ${goQuoted(memberIPs)} are not subset of control plane node ips ${goQuoted(cpIPs)}`,
    );
}

async function apidReady(ctx: CheckContext, signal: AbortSignal): Promise<void> {
  await Promise.all(ctx.cluster.nodes().map((n) => ctx.nodes.platformMode(n.internalIP, signal)));
}

async function nonContainerNodes(ctx: CheckContext, signal: AbortSignal): Promise<string[]> {
  const ips = ctx.cluster.nodes().map((n) => n.internalIP);
  const modes = await Promise.all(ips.map((ip) => ctx.nodes.platformMode(ip, signal)));
  return ips.filter((_, i) => modes[i] !== "container");
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const minimumMemory: Record<NodeType, number> = {
  init: 2 * GiB - 150 * MiB,
  controlplane: 2 * GiB - 150 * MiB,
  worker: GiB - 150 * MiB,
};

async function memorySizes(ctx: CheckContext, signal: AbortSignal): Promise<void> {
  const types = new Map<string, NodeType>();
  for (const t of ["init", "controlplane", "worker"] as const)
    for (const n of ctx.cluster.nodesByType(t)) types.set(n.internalIP, t);
  const errors: string[] = [];
  for (const node of await nonContainerNodes(ctx, signal)) {
    const type = types.get(node);
    if (!type) throw new Error(`unexpected node ${JSON.stringify(node)} in response`);
    const total = (await ctx.nodes.memoryTotalKiB(node, signal)) * 1024;
    if (total < minimumMemory[type]) {
      errors.push(
        `node ${JSON.stringify(node)} does not meet memory requirements: expected at least ${Math.floor(minimumMemory[type] / MiB)} MiB, actual ${Math.floor(total / MiB)} MiB`,
      );
    }
  }
  const err = multiError(errors);
  if (err) throw err;
}

/** go-humanize's IBytes: one decimal below 10 units, none above. */
function humanIBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  if (n < 10) return `${n} B`;
  const e = Math.floor(Math.log(n) / Math.log(1024));
  const val = Math.floor((n / 1024 ** e) * 10 + 0.5) / 10;
  return `${val < 10 ? val.toFixed(1) : val.toFixed(0)} ${units[e]}`;
}

async function diskSizes(ctx: CheckContext, signal: AbortSignal): Promise<void> {
  const errors: string[] = [];
  const minimum = 6 * GiB;
  for (const node of await nonContainerNodes(ctx, signal)) {
    const eph = await ctx.nodes.ephemeral(node, signal);
    if (!eph) {
      errors.push(`no ephemeral partition found for node '${node}'`);
      continue;
    }
    if (eph.sizeBytes === undefined) {
      errors.push(`ephemeral partition ${JSON.stringify(eph.source)} not found for node ${JSON.stringify(node)}`);
      continue;
    }
    // Talos adds 1400 MiB for what the system itself takes.
    const actual = eph.sizeBytes + 1400 * MiB;
    if (actual < minimum) {
      errors.push(
        `ephemeral partition ${JSON.stringify(eph.source)} for node ${JSON.stringify(node)} is too small, expected at least ${humanIBytes(minimum)}, actual ${humanIBytes(actual)}`,
      );
    }
  }
  const err = multiError(errors);
  if (err) throw err;
}

async function allBooted(ctx: CheckContext, signal: AbortSignal): Promise<void> {
  const ips = ctx.cluster.nodes().map((n) => n.internalIP);
  const stages = await Promise.all(ips.map((ip) => ctx.nodes.machineStage(ip, signal)));
  const byStage = new Map<string, string[]>();
  ips.forEach((ip, i) => {
    const stage = stages[i]!;
    if (stage !== "running") byStage.set(stage, [...(byStage.get(stage) ?? []), ip]);
  });
  if (byStage.size === 0) return;
  const parts = [...byStage.keys()].sort().map((s) => `${s}: ${goList(byStage.get(s)!.sort())}`);
  throw new Error(`nodes are not running: ${parts.join(", ")}`);
}

interface KubeNode {
  name: string;
  ips: string[];
  controlPlane: boolean;
  ready: boolean;
  unschedulable: boolean;
}

function kubeNode(o: KubernetesObject): KubeNode {
  const meta = (o.metadata ?? {}) as { name?: string; labels?: Record<string, string> };
  const spec = (o.spec ?? {}) as { unschedulable?: boolean };
  const status = (o.status ?? {}) as {
    addresses?: { type: string; address: string }[];
    conditions?: { type: string; status: string }[];
  };
  const ips = (status.addresses ?? [])
    .filter((a) => a.type === "InternalIP" || a.type === "ExternalIP")
    .map((a) => a.address);
  const ready = status.conditions?.find((c) => c.type === "Ready");
  return {
    name: meta.name ?? "",
    ips,
    controlPlane: Object.keys(meta.labels ?? {}).includes("node-role.kubernetes.io/control-plane"),
    ready: ready === undefined || ready.status === "True",
    unschedulable: spec.unschedulable === true,
  };
}

/** Talos's cluster.NodesMatch: every expected node found by a shared IP, none left over. */
export function nodesMatch(expected: NodeInfo[], actual: { ips: string[] }[]): void {
  const left = [...actual];
  for (const e of expected) {
    const i = left.findIndex((a) => a.ips.some((ip) => e.ips.includes(ip)));
    if (i < 0) throw new Error(`can't find expected node with IPs ${goQuoted(e.ips)}`);
    left.splice(i, 1);
  }
  if (left.length > 0)
    throw new Error(`unexpected nodes with IPs ${goQuoted(left.flatMap((n) => n.ips).sort(compareIPs))}`);
}

function compareIPs(a: string, b: string): number {
  const v6 = (ip: string) => ip.includes(":");
  if (v6(a) !== v6(b)) return v6(a) ? 1 : -1;
  const num = (ip: string) =>
    v6(ip)
      ? ip
      : ip
          .split(".")
          .map((x) => x.padStart(3, "0"))
          .join(".");
  return num(a) < num(b) ? -1 : num(a) > num(b) ? 1 : 0;
}

async function kubeNodes(ctx: CheckContext, signal: AbortSignal): Promise<KubeNode[]> {
  return (await (await ctx.kube()).list("/api/v1/nodes", undefined, signal)).map(kubeNode);
}

async function controlPlaneComponents(ctx: CheckContext, signal: AbortSignal): Promise<void> {
  const kube = await ctx.kube();
  const cps = (await kubeNodes(ctx, signal)).filter((n) => n.controlPlane);
  nodesMatch(controlPlanes(ctx.cluster), cps);
  const daemonSets = await kube.list(
    "/apis/apps/v1/namespaces/kube-system/daemonsets",
    "k8s-app in (kube-apiserver,kube-scheduler,kube-controller-manager)",
    signal,
  );
  for (const ds of daemonSets) {
    const name = (ds.metadata as { name?: string }).name ?? "";
    const st = (ds.status ?? {}) as Record<string, number | undefined>;
    const desired = st.desiredNumberScheduled ?? 0;
    for (const [field, label] of [
      ["currentNumberScheduled", "current number scheduled"],
      ["numberAvailable", "number available"],
      ["numberReady", "number ready"],
    ] as const) {
      if ((st[field] ?? 0) !== desired)
        throw new Error(`expected ${label} for ${name} to be ${desired}, got ${st[field] ?? 0}`);
    }
  }
  for (const app of ["kube-apiserver", "kube-scheduler", "kube-controller-manager"]) {
    const pods = (await kube.list("/api/v1/namespaces/kube-system/pods", `k8s-app = ${app}`, signal)).filter(
      (p) =>
        !(p.metadata as { annotations?: Record<string, string> }).annotations?.[
          "checkpointer.alpha.coreos.com/checkpoint-of"
        ],
    );
    if (pods.length !== cps.length)
      throw new Error(`expected number of pods for ${app} to be ${cps.length}, got ${pods.length}`);
    const notReady = pods
      .filter((p) => {
        const ready = podCondition(p, "Ready");
        return ready !== undefined && ready !== "True";
      })
      .map(podName);
    if (notReady.length > 0) throw new Error(`some pods are not ready for ${app}: ${goList(notReady)}`);
  }
}

const podName = (p: KubernetesObject): string => (p.metadata as { name?: string }).name ?? "";
function podCondition(p: KubernetesObject, type: string): string | undefined {
  return ((p.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? []).find(
    (c) => c.type === type,
  )?.status;
}

async function staticPods(ctx: CheckContext, signal: AbortSignal): Promise<void> {
  for (const node of controlPlanes(ctx.cluster)) {
    const ids = await ctx.nodes.staticPodIds(node.internalIP, signal);
    const missing = [
      "kube-system/kube-apiserver",
      "kube-system/kube-controller-manager",
      "kube-system/kube-scheduler",
    ].filter((p) => !ids.some((id) => id.startsWith(p)));
    if (missing.length > 0) throw new Error(`missing static pods on node ${node.internalIP}: ${goList(missing)}`);
  }
}

async function podsReady(ctx: CheckContext, namespace: string, selector: string, signal: AbortSignal): Promise<void> {
  const pods = await (await ctx.kube()).list(`/api/v1/namespaces/${namespace}/pods`, selector, signal);
  if (pods.length === 0)
    throw new Error(
      `no pods found for namespace ${JSON.stringify(namespace)} and label selector ${JSON.stringify(selector)}`,
    );
  const ready: string[] = [];
  const notReady: string[] = [];
  for (const p of pods) {
    const meta = p.metadata as { deletionTimestamp?: string };
    const status = (p.status ?? {}) as { phase?: string; containerStatuses?: { state?: { terminated?: unknown } }[] };
    if (meta.deletionTimestamp || status.phase === "Failed") continue;
    if ((status.containerStatuses ?? []).every((c) => c.state?.terminated !== undefined)) continue;
    (podCondition(p, "Ready") === "True" ? ready : notReady).push(podName(p));
  }
  if (ready.length === 0)
    throw new Error(
      `no ready pods found for namespace ${JSON.stringify(namespace)} and label selector ${JSON.stringify(selector)}`,
    );
  if (notReady.length > 0) throw new Error(`some pods are not ready: ${goList(notReady)}`);
}

async function presentThenReady(
  ctx: CheckContext,
  collection: string,
  selector: string,
  signal: AbortSignal,
): Promise<void> {
  const present = await (await ctx.kube()).list(`/apis/apps/v1/namespaces/kube-system/${collection}`, selector, signal);
  if (present.length === 0) throw new SkipAssertion();
  await podsReady(ctx, "kube-system", selector, signal);
}

const MIN = 60_000;
const check = (
  description: string,
  timeoutMs: number,
  intervalMs: number,
  assertion: HealthCheck["assertion"],
): HealthCheck => ({ description, timeoutMs, intervalMs, assertion });

/** Talos's DefaultClusterChecks, in its order. */
export function defaultClusterChecks(): HealthCheck[] {
  return [
    check("etcd to be healthy", 5 * MIN, 5000, (c, s) => serviceHealthy(c, "etcd", controlPlanes(c.cluster), s)),
    check("etcd members to be consistent across nodes", 5 * MIN, 5000, etcdConsistent),
    check("etcd members to be control plane nodes", 5 * MIN, 5000, etcdOnControlPlanes),
    check("apid to be ready", 5 * MIN, 5000, apidReady),
    check("all nodes memory sizes", 5 * MIN, 5000, memorySizes),
    check("all nodes disk sizes", 5 * MIN, 5000, diskSizes),
    check("kubelet to be healthy", 5 * MIN, 5000, (c, s) => serviceHealthy(c, "kubelet", controlPlanes(c.cluster), s)),
    check("all nodes to finish boot sequence", 5 * MIN, 5000, allBooted),
    check("all k8s nodes to report", 5 * MIN, 30_000, async (c, s) =>
      nodesMatch(c.cluster.nodes(), await kubeNodes(c, s)),
    ),
    check("all k8s nodes to report ready", 10 * MIN, 5000, async (c, s) => {
      const notReady = (await kubeNodes(c, s)).filter((n) => !n.ready).map((n) => n.name);
      if (notReady.length > 0) throw new Error(`some nodes are not ready: ${goList(notReady)}`);
    }),
    check("all control plane static pods to be running", 5 * MIN, 5000, staticPods),
    check("all control plane components to be ready", 5 * MIN, 5000, controlPlaneComponents),
    check("kube-proxy to report ready", 3 * MIN, 5000, (c, s) =>
      presentThenReady(c, "daemonsets", "k8s-app=kube-proxy", s),
    ),
    check("coredns to report ready", 3 * MIN, 5000, (c, s) =>
      presentThenReady(c, "replicasets", "k8s-app=kube-dns", s),
    ),
    check("all k8s nodes to report schedulable", 5 * MIN, 5000, async (c, s) => {
      // Talos stops at the first unschedulable node.
      const first = (await kubeNodes(c, s)).find((n) => n.unschedulable);
      if (first) throw new Error(`some nodes are not schedulable: ${goList([first.name])}`);
    }),
  ];
}

/** A check, or the whole run, timed out (Go's context.DeadlineExceeded text, which gRPC reports as DeadlineExceeded). */
export class CheckTimeoutError extends DeadlineExceededError {
  constructor() {
    super("context deadline exceeded");
  }
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });

/**
 * Runs the checks in order, each polled until it passes, is skipped or times out,
 * calling `report` with "waiting for <description>: <state>" whenever the line changes.
 * `scale` shortens every interval and timeout (tests).
 */
export async function runChecks(
  ctx: CheckContext,
  checks: HealthCheck[],
  report: (line: string) => void,
  signal: AbortSignal,
  scale = 1,
): Promise<void> {
  let last = "";
  const update = (line: string): void => {
    const trimmed = `waiting for ${line}`.trim();
    if (trimmed !== last) report(trimmed);
    last = trimmed;
  };
  for (const c of checks) {
    if (signal.aborted) throw new CheckTimeoutError();
    update(`${c.description}: ...`);
    const deadline = Date.now() + c.timeoutMs * scale;
    for (;;) {
      const attempt = AbortSignal.any([signal, AbortSignal.timeout(Math.max(1, c.intervalMs * scale))]);
      const started = Date.now();
      let state: string;
      try {
        await c.assertion(ctx, attempt);
        state = "OK";
      } catch (err) {
        state = err instanceof SkipAssertion ? SKIP : err instanceof Error ? err.message : String(err);
      }
      update(`${c.description}: ${state}`);
      if (state === "OK" || state === SKIP) break;
      if (signal.aborted || Date.now() >= deadline) throw new CheckTimeoutError();
      await sleep(Math.max(0, c.intervalMs * scale - (Date.now() - started)), signal);
    }
  }
}
