// One control plane running Kubernetes in QEMU, from the air-gapped site the Kubernetes journey uses
// (test/e2e/kubernetes-site.ts): seconds from `Bootstrap` to etcd healthy, to the API server's static
// pod Ready and to the server-side HealthCheck passing; then the node's memory by cgroup once the
// control plane runs (memory.current of each of Talos's groups, the agent's, the services' and each
// pod's), and whether HealthCheck still passes after it. Prints figures only.
//
// usage: node dist/bench/kubernetes.js [--memory MiB] [--cpus N]   (default 4096 MiB, 2 vCPUs: under TCG one
//   cannot start the API server within its own deadlines; Talos documents 2 GiB as a control plane's
//   minimum: --memory 2048)
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { ApplyMode } from "../agent/src/api/enums.js";
import type { NodeClient } from "../agent/src/client/client.js";
import { parseTalosconfig } from "../agent/src/client/talosconfig.js";
import { generateConfigs } from "../agent/src/config/generate/index.js";
import { goProgram } from "../test/integration/helpers/go-programs.js";
import {
  adminKubeconfig,
  airGappedRegistry,
  controlPlaneHealth,
  nodeHostname,
  siteConfig,
  siteDir,
} from "../test/e2e/kubernetes-site.js";
import { expectServicesHealthy, namesUnder } from "../test/e2e/node-checks.js";
import { bootNode, waitFor } from "../test/e2e/qemu.js";

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? dflt) : dflt;
};
const memoryMiB = Number(arg("memory", "4096"));
process.env.BASALT_E2E_CPUS = arg("cpus", "2");
const hourMs = 3_600_000;

type ResourceReply = { resource: { spec: { yaml_spec: string } } };
type PodList = {
  items: { metadata: { name: string; namespace: string; uid: string; annotations?: Record<string, string> } }[];
};

async function memoryMiBOf(c: NodeClient, group: string): Promise<number> {
  return Number((await c.read(`/sys/fs/cgroup/${group}/memory.current`)).toString()) / 2 ** 20;
}

/** Each pod's cgroup (kubepods/<qos>/pod<uid>) named after its pod: a static pod's uid is its mirror's config.mirror annotation. */
function podNames(pods: PodList): Map<string, string> {
  const byUid = new Map<string, string>();
  for (const p of pods.items) {
    const uid = p.metadata.annotations?.["kubernetes.io/config.mirror"] ?? p.metadata.uid;
    byUid.set(`pod${uid}`, `${p.metadata.namespace}/${p.metadata.name}`);
  }
  return byUid;
}

async function memoryByGroup(c: NodeClient, pods: PodList): Promise<[string, number][]> {
  const rows: [string, number][] = [["(total) /", 0]];
  for (const top of ["init", "system", "podruntime"]) {
    rows.push([top, await memoryMiBOf(c, top)]);
    for (const child of await namesUnder(c, `/sys/fs/cgroup/${top}`)) {
      if (!child.includes(".")) rows.push([`${top}/${child}`, await memoryMiBOf(c, `${top}/${child}`)]);
    }
  }
  rows.push(["kubepods", await memoryMiBOf(c, "kubepods")]);
  const names = podNames(pods);
  for (const qos of ["", "burstable", "besteffort"]) {
    const dir = qos ? `kubepods/${qos}` : "kubepods";
    for (const pod of (await namesUnder(c, `/sys/fs/cgroup/${dir}`)).filter((n) => n.startsWith("pod"))) {
      rows.push([`  ${names.get(pod) ?? pod}`, await memoryMiBOf(c, `${dir}/${pod}`)]);
    }
  }
  const meminfo = (await c.read("/proc/meminfo")).toString();
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(meminfo)?.[1] ?? NaN);
  rows[0] = ["(node) MemTotal - MemAvailable", (kib("MemTotal") - kib("MemAvailable")) / 1024];
  return rows;
}

async function main(): Promise<void> {
  const work = siteDir("bench-kubernetes");
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });
  const registry = await airGappedRegistry(path.join(work, "registry"));
  const kubectlBinary = goProgram("kubectl");
  const generated = await generateConfigs({
    clusterName: "bench",
    endpoint: "https://10.0.2.15:6443",
    installDisk: "/dev/vda",
  });
  fs.writeFileSync(path.join(work, "talosconfig"), generated.talosconfig);
  const creds = parseTalosconfig(generated.talosconfig);
  const node = await bootNode({
    name: "bench-kubernetes",
    boot: "iso",
    netOpen: true,
    memory: memoryMiB,
    k8sApi: true,
  });
  try {
    await waitFor(node, "maintenance API", () => node.client().disks(), hourMs);
    const insecure = node.client();
    await insecure.unary(
      insecure.machine,
      "ApplyConfiguration",
      { data: Buffer.from(siteConfig(generated.controlplane, registry)), mode: ApplyMode.REBOOT, dry_run: false },
      300_000,
    );
    const c = () => node.mtlsClient(creds);
    await waitFor(node, "mTLS after install", () => c().version(), hourMs);
    await expectServicesHealthy(node, c(), ["cri", "kubelet"], hourMs);
    const start = Date.now();
    const since = () => `${((Date.now() - start) / 1000).toFixed(0)} s`;
    await c().unary(c().machine, "Bootstrap", {}, 120_000);
    await expectServicesHealthy(node, c(), ["etcd"], hourMs);
    console.log(`Bootstrap -> etcd healthy\t${since()}`);
    await waitFor(
      node,
      "kube-apiserver ready",
      async () => {
        const yaml = (
          (await c().resourceGet(
            "k8s",
            "StaticPodStatuses.kubernetes.talos.dev",
            `kube-system/kube-apiserver-${nodeHostname}`,
          )) as ResourceReply
        ).resource.spec.yaml_spec;
        const status = parse(yaml) as { conditions?: { type: string; status: string }[] };
        if (status.conditions?.find((cond) => cond.type === "Ready")?.status !== "True") throw new Error("not ready");
      },
      hourMs,
    );
    console.log(`Bootstrap -> kube-apiserver Ready\t${since()}`);
    await waitFor(node, "HealthCheck passing", () => controlPlaneHealth(c(), 1200), hourMs);
    console.log(`Bootstrap -> HealthCheck passing\t${since()}`);
    const kubeconfig = path.join(work, "kubeconfig");
    fs.writeFileSync(kubeconfig, await adminKubeconfig(c()));
    const pods = JSON.parse(
      execFileSync(
        kubectlBinary,
        [
          "--kubeconfig",
          kubeconfig,
          "--server",
          `https://127.0.0.1:${node.k8sPort}`,
          "get",
          "pods",
          "-A",
          "-o",
          "json",
        ],
        { encoding: "utf8" },
      ),
    ) as PodList;
    console.log(`memory (MiB, memory.current; guest ${memoryMiB} MiB, ${process.env.BASALT_E2E_CPUS} vCPU)`);
    for (const [group, mib] of await memoryByGroup(c(), pods)) console.log(`${group}\t${mib.toFixed(1)}`);
    const healthy = await controlPlaneHealth(c(), 1200).then(
      () => "yes",
      (err: Error) => `no (${err.message})`,
    );
    console.log(`HealthCheck passing again once measured\t${healthy}`);
  } finally {
    await node.stop({ removeDisk: true });
    await registry.stop();
  }
}

await main();
