// The Kubernetes journey, as an air-gapped site runs it: the project's Kubernetes images pushed to a
// registry on the host, the control plane's config sending registry.k8s.io, gcr.io and ghcr.io there;
// the ISO installs, etcd waits for Bootstrap, the kubelet runs the static control plane, kubeconfig
// reaches the API server with kubectl, a pod answers through a Service, a kubelet and an API server given a
// flag they do not know fail without locking the node out, a graceful reboot stops the pods
// through logind's inhibitor lock and brings the cluster back, an etcd snapshot brings it back after
// EPHEMERAL is wiped, and a shutdown stops the pods.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { parse, parseDocument } from "yaml";
import { ApplyMode } from "../../agent/src/api/enums.js";
import type { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { KUBELET_SHUTDOWN_GRACE_SECONDS } from "../../agent/src/services/cri/stop-pods.js";
import { goProgram } from "../integration/helpers/go-programs.js";
import { registryBinary } from "../integration/helpers/registry.js";
import {
  adminKubeconfig,
  airGappedRegistry,
  controlPlaneHealth,
  nodeHostname,
  siteConfig,
  siteDir,
} from "./kubernetes-site.js";
import {
  artifactsPresent,
  bootNode,
  consoleReport,
  journeySteps,
  sequenceFailed,
  waitExit,
  waitFor,
  type BootedNode,
} from "./qemu.js";
import { expectServicesHealthy, serviceInfo } from "./node-checks.js";

// Each about three times what it takes in a whole CI run: a step that hangs fails within the journey's
// timeout, and the journey's failure within CI's 90 minutes.
const bootMs = 600_000;
/** etcd, then the API server, controller manager and scheduler started under TCG. */
const controlPlaneMs = 900_000;
const hostname = nodeHostname;
const work = siteDir("kubernetes");

type ResourceReply = { resource: { spec: { yaml_spec: string } } };

const restricted =
  "securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: [ALL] }, runAsNonRoot: true, seccompProfile: { type: RuntimeDefault } }";
const echoImage = "registry.basalt.test/echo:v1";

/**
 * The echo server as a Deployment behind a Service: a pod the kubelet stops at a node's shutdown, and
 * reports stopped, is Failed for good, and its ReplicaSet starts the next one. It meets the
 * "restricted" Pod Security Standard, which Talos's admission config warns about, and tolerates the
 * node's not-ready and unreachable taints for good: the minutes a control plane under TCG takes to
 * come back after a reboot would otherwise evict it (after 300 s).
 */
function echoServerManifests(): string {
  return `apiVersion: apps/v1
kind: Deployment
metadata: { name: echo }
spec:
  replicas: 1
  selector: { matchLabels: { app: echo } }
  template:
    metadata: { labels: { app: echo } }
    spec:
      tolerations:
        - { key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute }
        - { key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute }
      containers: [{ name: echo, image: ${echoImage}, args: [serve, ":8080"], ports: [{ containerPort: 8080 }], ${restricted} }]
---
apiVersion: v1
kind: Service
metadata: { name: echo }
spec:
  selector: { app: echo }
  ports: [{ port: 80, targetPort: 8080 }]
`;
}

/**
 * A client pod that fetches from the echo server by the Service's DNS name until it gets an answer
 * (restarted on failure: kube-proxy programs a new Service a moment after it exists); it prints the
 * hostname of the pod that answered.
 */
function echoClientManifest(name: string): string {
  return `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  restartPolicy: OnFailure
  containers: [{ name: client, image: ${echoImage}, args: [get, "http://echo.default.svc.cluster.local/"], ${restricted} }]
`;
}

/** The text of a log read over the API, whole. */
async function logText(c: NodeClient, req: object): Promise<string> {
  const messages = await c.collect<{ bytes?: Buffer }>(c.machine, "Logs", { tail_lines: -1, ...req });
  return Buffer.concat(messages.map((m) => m.bytes ?? Buffer.alloc(0))).toString();
}

/** The request lines of an echo server's log, read with Logs -k (CRI's format: `<time> stderr F <line>`). */
async function echoRequests(c: NodeClient, pod: string): Promise<string[]> {
  const log = await logText(c, { namespace: "k8s.io", driver: 1, id: `default/${pod}:echo` });
  return log
    .split("\n")
    .filter((l) => l.includes("GET /"))
    .map((l) => l.replace(/^\S+ stderr F \S+ \S+ /, ""));
}

/** About half an hour under TCG with the host to itself; BASALT_E2E_KUBERNETES=0 leaves it out. */
const skip =
  process.env.BASALT_E2E_KUBERNETES === "0"
    ? "BASALT_E2E_KUBERNETES=0 leaves the Kubernetes journey out"
    : artifactsPresent() && fs.existsSync(registryBinary)
      ? false
      : "image not built (npm run image), or docker-registry missing";

test("Kubernetes journey: install → bootstrap → static control plane → kubectl → Service → bad flags → reboot → etcd recovery → shutdown", {
  skip,
  timeout: 45 * 60_000,
}, async (t) => {
  fs.rmSync(work, { recursive: true, force: true });
  fs.mkdirSync(work, { recursive: true });
  const registry = await airGappedRegistry(path.join(work, "registry"));
  t.after(() => registry.stop());
  const kubectlBinary = goProgram("kubectl");

  const generated = await generateConfigs({
    clusterName: "kubernetes",
    endpoint: "https://10.0.2.15:6443",
    installDisk: "/dev/vda",
  });
  const config = siteConfig(generated.controlplane, registry);
  const creds = parseTalosconfig(generated.talosconfig);
  // Kept beside the console log: a failed run is read with `talosctl --talosconfig` on the node left behind.
  fs.writeFileSync(path.join(work, "talosconfig"), generated.talosconfig);
  const node: BootedNode = await bootNode({
    name: "kubernetes",
    boot: "iso",
    netOpen: true,
    memory: 4096,
    // One vCPU under TCG cannot start the API server within its own post-start deadlines.
    cpus: 2,
    k8sApi: true,
  });
  let finished = false;
  t.after(async () => {
    // The test's own timeout ends a step without a waitFor's report: CI keeps only what is printed.
    if (!finished) console.log(consoleReport(node));
    await node.stop({ removeDisk: true });
  });
  const admin = () => node.mtlsClient(creds);

  const step = journeySteps(t);

  await step(
    "the ISO installs a control plane: etcd waits for Bootstrap, the kubelet runs from its image",
    async () => {
      await waitFor(node, "maintenance API", () => node.client().disks(), bootMs);
      const insecure = node.client();
      await insecure.unary(
        insecure.machine,
        "ApplyConfiguration",
        { data: Buffer.from(config), mode: ApplyMode.REBOOT, dry_run: false },
        300_000,
      );
      await waitFor(node, "mTLS after install", () => admin().version(), bootMs, { failOn: sequenceFailed });
      await expectServicesHealthy(node, admin(), ["cri", "kubelet"], bootMs);
      assert.equal((await serviceInfo(admin(), "etcd"))?.state, "Preparing");
      await waitFor(
        node,
        "etcd's bootstrap hint",
        async () => assert.match(node.console(), /please run `talosctl bootstrap`/),
        bootMs,
      );
    },
  );

  await step("Bootstrap starts etcd; a second one is refused as AlreadyExists", async () => {
    const c = admin();
    await c.unary(c.machine, "Bootstrap", {}, 120_000);
    await expectServicesHealthy(node, c, ["etcd"], controlPlaneMs);
    await assert.rejects(c.unary(c.machine, "Bootstrap", {}), (e: Error & { code?: number; details?: string }) => {
      assert.equal(e.code, 6, e.message);
      assert.match(e.details ?? "", /etcd data directory is not empty/);
      return true;
    });
  });

  const staticPods = ["kube-apiserver", "kube-controller-manager", "kube-scheduler"];
  await step("the kubelet runs the static control plane: each pod Running and Ready, the machine ready", async () => {
    const c = admin();
    for (const pod of staticPods) {
      await waitFor(
        node,
        `${pod} ready`,
        async () => {
          const yaml = (
            (await c.resourceGet(
              "k8s",
              "StaticPodStatuses.kubernetes.talos.dev",
              `kube-system/${pod}-${hostname}`,
            )) as ResourceReply
          ).resource.spec.yaml_spec;
          // The spec's YAML is the kubelet's v1 PodStatus itself, as Talos marshals it.
          const status = parse(yaml) as { phase?: string; conditions?: { type: string; status: string }[] };
          assert.equal(status.phase, "Running");
          assert.equal(status.conditions?.find((cond) => cond.type === "Ready")?.status, "True");
        },
        controlPlaneMs,
      );
    }
    await waitFor(
      node,
      "MachineStatus ready",
      async () => {
        const yaml = ((await c.resourceGet("runtime", "MachineStatuses.runtime.talos.dev", "machine")) as ResourceReply)
          .resource.spec.yaml_spec;
        assert.match(yaml, /stage: running[\s\S]*ready: true/);
      },
      controlPlaneMs,
    );
  });

  const kubeconfig = path.join(work, "kubeconfig");
  const kubectl = (...args: string[]) =>
    execFileSync(
      kubectlBinary,
      ["--kubeconfig", kubeconfig, "--server", `https://127.0.0.1:${node.k8sPort}`, ...args],
      // stderr goes into the error a failed wait reports, not into the test's output on every retry.
      { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
    );
  const names = (json: string) =>
    (JSON.parse(json) as { items: { metadata: { name: string } }[] }).items.map((i) => i.metadata.name).sort();

  await step(
    "kubeconfig reaches the API server: the node registered under its hostname, the control plane's mirror pods, the bootstrap manifests applied",
    async () => {
      fs.writeFileSync(kubeconfig, await adminKubeconfig(admin()));
      const nodes = await waitFor(
        node,
        "the node registered",
        async () => {
          const n = names(kubectl("get", "nodes", "-o", "json"));
          assert.deepEqual(n, [hostname]);
          return n;
        },
        controlPlaneMs,
      );
      assert.deepEqual(nodes, [hostname]);
      await waitFor(
        node,
        "the mirror pods",
        async () => {
          const pods = names(kubectl("get", "pods", "-n", "kube-system", "-o", "json")).filter((n) =>
            n.endsWith(`-${hostname}`),
          );
          assert.deepEqual(
            pods,
            staticPods.map((p) => `${p}-${hostname}`),
          );
        },
        controlPlaneMs,
      );
      await waitFor(
        node,
        "the bootstrap manifests",
        async () => {
          assert.deepEqual(names(kubectl("get", "daemonsets", "-n", "kube-system", "-o", "json")), [
            "kube-flannel",
            "kube-proxy",
          ]);
          assert.deepEqual(names(kubectl("get", "deployments", "-n", "kube-system", "-o", "json")), ["coredns"]);
        },
        controlPlaneMs,
      );
    },
  );

  type ContainerStatus = {
    ready: boolean;
    restartCount: number;
    state: { running?: object };
    /** containerd://<id> */
    containerID: string;
  };
  type Pod = {
    metadata: { name: string };
    status: {
      phase: string;
      containerStatuses?: ContainerStatus[];
    };
  };
  /**
   * kubectl once the API server answers it: after a reboot or a restart the server can drop a connection or
   * two after it first answered, which says nothing of the state a step checks.
   */
  const kubectlAnswered = (...args: string[]) =>
    waitFor(node, `kubectl ${args.join(" ")} answered`, async () => kubectl(...args), 120_000);
  const pod = async (name: string) => JSON.parse(await kubectlAnswered("get", "pod", name, "-o", "json")) as Pod;
  /** The echo Deployment's one running server pod. */
  const runningEcho = async () => {
    const listed = await kubectlAnswered("get", "pods", "-l", "app=echo", "-o", "json");
    const pods = (JSON.parse(listed) as { items: Pod[] }).items;
    const running = pods.filter((p) => p.status.phase === "Running").map((p) => p.metadata.name);
    assert.equal(running.length, 1, `running echo pods: ${running.join(", ")}`);
    return running[0]!;
  };
  const echoContainer = (p: Pod) => {
    const c = p.status.containerStatuses?.[0];
    assert.ok(c, JSON.stringify(p.status));
    return c;
  };
  /**
   * The timeouts of the CRI's StopContainer calls for a container, in order, as containerd logged them
   * (its log is kept in /var/log/cri.log on EPHEMERAL, across reboots).
   */
  const stopContainerTimeouts = async (containerId: string) => {
    const log = (await waitFor(node, "containerd's log", () => admin().read("/var/log/cri.log"), 120_000)).toString();
    const call = new RegExp(`StopContainer for \\\\?"${containerId}\\\\?" with timeout (\\d+) \\(s\\)`, "g");
    return [...log.matchAll(call)].map((m) => Number(m[1]));
  };
  /** What must survive a reboot and a recovery: the node's and the echo Service's identities. */
  const clusterObjects = async () => {
    const uid = async (kind: string, name: string) =>
      (JSON.parse(await kubectlAnswered("get", kind, name, "-o", "json")) as { metadata: { uid: string } }).metadata
        .uid;
    return { node: await uid("node", hostname), service: await uid("service", "echo") };
  };
  const nodeReady = async () => {
    const n = JSON.parse(kubectl("get", "node", hostname, "-o", "json")) as {
      status: { conditions: { type: string; status: string }[] };
    };
    assert.equal(n.status.conditions.find((cond) => cond.type === "Ready")?.status, "True");
  };
  /** Starts a client pod and resolves with what it printed: the hostname of the server pod that answered. */
  const askThroughService = async (client: string) => {
    const manifest = path.join(work, `${client}.yaml`);
    fs.writeFileSync(manifest, echoClientManifest(client));
    await kubectlAnswered("apply", "-f", manifest);
    await waitFor(
      node,
      `${client} succeeded`,
      async () => assert.equal((await pod(client)).status.phase, "Succeeded"),
      controlPlaneMs,
    );
    return kubectlAnswered("logs", client);
  };
  const bootId = async () => (await admin().read("/proc/sys/kernel/random/boot_id")).toString().trim();

  await step(
    "the node Ready with flannel, kube-system's pods Running, and the server-side health check passing",
    async () => {
      await waitFor(node, "the node Ready", nodeReady, controlPlaneMs);
      await waitFor(
        node,
        "kube-system's pods Running",
        async () => {
          const pods = (
            JSON.parse(kubectl("get", "pods", "-n", "kube-system", "-o", "json")) as {
              items: { metadata: { name: string }; status: { phase: string } }[];
            }
          ).items;
          const byPrefix = (prefix: string) => pods.filter((p) => p.metadata.name.startsWith(prefix)).length;
          // Talos's manifests: CoreDNS with two replicas, one flannel and one kube-proxy pod a node, and the three mirror pods.
          assert.deepEqual(
            [byPrefix("coredns-"), byPrefix("kube-flannel-"), byPrefix("kube-proxy-"), pods.length],
            [2, 1, 1, 7],
          );
          assert.deepEqual(
            pods.filter((p) => p.status.phase !== "Running").map((p) => p.metadata.name),
            [],
          );
        },
        controlPlaneMs,
      );
      const messages = await controlPlaneHealth(admin(), 600);
      assert.ok(messages.includes("waiting for all k8s nodes to report ready: OK"), messages.join("\n"));
      assert.ok(messages.includes("waiting for coredns to report ready: OK"), messages.join("\n"));
    },
  );

  await step("a pod answers through a Service by its DNS name; the server's log read with Logs -k", async () => {
    const manifests = path.join(work, "echo.yaml");
    fs.writeFileSync(manifests, echoServerManifests());
    kubectl("apply", "-f", manifests);
    const server = await waitFor(node, "the echo server running", runningEcho, controlPlaneMs);
    assert.equal(await askThroughService("client"), `${server}\n`);
    // One request, from the client pod.
    assert.deepEqual(await echoRequests(admin(), server), ["GET /"]);
  });

  /** The node's config with `value` at `keys` (what a user's patch applies). */
  const configWith = (keys: string[], value: unknown) => {
    const doc = parseDocument(config);
    doc.setIn(keys, value);
    return doc.toString();
  };
  const applyLive = async (yaml: string) => {
    const c = admin();
    await c.unary(c.machine, "ApplyConfiguration", { data: Buffer.from(yaml), mode: ApplyMode.NO_REBOOT }, 120_000);
  };
  await step(
    "a kubelet flag it does not know: the kubelet waits to restart with an event and a console line, the API answers; fixed, the kubelet is healthy again",
    async () => {
      const from = node.console().length;
      await applyLive(configWith(["machine", "kubelet", "extraArgs"], { "no-such-flag": "1" }));
      const failure = /^Error running kubelet, going to restart forever: /;
      await waitFor(
        node,
        "the kubelet waiting to restart",
        async () => {
          const s = await serviceInfo(admin(), "kubelet");
          assert.equal(s?.state, "Waiting");
          assert.match(s?.events.events.at(-1)?.msg ?? "", failure);
        },
        controlPlaneMs,
      );
      assert.match(
        node.console().slice(from),
        /service\[kubelet\]\(Waiting\): Error running kubelet, going to restart forever: /,
      );
      assert.match(await logText(admin(), { namespace: "system", id: "kubelet" }), /unknown flag: --no-such-flag/);
      assert.ok(await admin().version());
      await applyLive(config);
      await expectServicesHealthy(node, admin(), ["kubelet"], controlPlaneMs);
      await waitFor(node, "the node Ready", nodeReady, controlPlaneMs);
    },
  );

  await step(
    "an API server flag it does not know: its container exits, its log says why, the Talos API answers; fixed, kubectl reaches the API server again",
    async () => {
      const pod = `kube-system/kube-apiserver-${hostname}`;
      type Containers = { messages: { containers: { pod_id: string; name: string; status: string }[] }[] };
      const apiServerContainers = async () => {
        const c = admin();
        const listed = await c.unary<Containers>(c.machine, "Containers", { namespace: "k8s.io", driver: 1 });
        return listed.messages[0]!.containers.filter((x) => x.pod_id === pod && x.name === "kube-apiserver");
      };
      await applyLive(configWith(["cluster", "apiServer", "extraArgs"], { "no-such-flag": "1" }));
      // The kubelet's pod status needs the API server (its authorization webhook): CRI is what shows the crash.
      await waitFor(
        node,
        "the API server's container exited on its flags",
        async () => {
          const states = (await apiServerContainers()).map((x) => x.status);
          assert.ok(states.length > 0 && !states.includes("CONTAINER_RUNNING"), states.join(", "));
          const log = await logText(admin(), { namespace: "k8s.io", driver: 1, id: `${pod}:kube-apiserver` });
          assert.match(log, /unknown flag: --no-such-flag/);
        },
        controlPlaneMs,
      );
      assert.ok(await admin().version());
      await applyLive(config);
      await waitFor(node, "kubectl through the API server", nodeReady, controlPlaneMs);
      assert.equal((await apiServerContainers()).filter((x) => x.status === "CONTAINER_RUNNING").length, 1);
    },
  );

  await step(
    "a graceful reboot: the kubelet shuts down holding logind's inhibitor lock, the server is stopped before the node goes down; the cluster comes back whole",
    async () => {
      const before = await clusterObjects();
      const server = await runningEcho();
      const { restartCount: restarts, containerID } = echoContainer(await pod(server));
      const booted = await bootId();
      const from = node.console().length;
      await admin().reboot();
      await waitFor(node, "mTLS in a new boot", async () => assert.notEqual(await bootId(), booted), bootMs, {
        failOn: sequenceFailed,
      });
      const shutdown = node.console().slice(from);
      assert.match(shutdown, /shutting down kubelet gracefully/);
      assert.match(shutdown, /waiting for the shutdown inhibitor locks {"holders":\["kubelet"\]/);
      assert.match(shutdown, /shutdown inhibitor locks: released {"holders":\[\]}/);
      await waitFor(node, "the node Ready again", nodeReady, controlPlaneMs);
      // The server is stopped once before the node goes down: by the kubelet's node shutdown manager
      // (woken by logind's PrepareForShutdown) with its grace period for regular pods, 20 s
      // (shutdownGracePeriod 30 s less 10 s for critical pods), or, when the kubelet's pod worker does not
      // get to it within that window (seen on a loaded host), by machined after the kubelet, with 30 s.
      // containerd's log says which: its StopContainer calls, kept in /var/log/cri.log across the reboot.
      const timeouts = await stopContainerTimeouts(containerID.replace(/^containerd:\/\//, ""));
      assert.equal(timeouts.length, 1, `StopContainer timeouts for the server: ${timeouts.join(", ")}`);
      assert.ok([20, KUBELET_SHUTDOWN_GRACE_SECONDS].includes(timeouts[0]!), `timeout ${timeouts[0]}`);
      assert.deepEqual(await clusterObjects(), before);
      const stopped = (await pod(server)).status;
      if (["Failed", "Succeeded"].includes(stopped.phase)) {
        // The kubelet's report of the stopped pod reached the API server: its ReplicaSet started the next one.
        const next = await waitFor(node, "the next echo server running", runningEcho, controlPlaneMs);
        assert.notEqual(next, server);
        assert.equal(await askThroughService("client-after-reboot"), `${next}\n`);
        return;
      }
      // The kubelet reports a terminal phase only once the pod's containers are gone, and on a single
      // node the API server it reports to is the next pod it stops (a known limitation of Kubernetes'
      // graceful node shutdown). When that report is lost, the pod is still Running to the cluster and
      // the kubelet starts its container again in place.
      await waitFor(
        node,
        "the echo server started again in place",
        async () => {
          const c = echoContainer(await pod(server));
          assert.ok(c.state.running && c.ready && c.restartCount > restarts, JSON.stringify(c));
        },
        controlPlaneMs,
      );
      assert.equal(await runningEcho(), server);
      assert.equal(await askThroughService("client-after-reboot"), `${server}\n`);
    },
  );

  await step(
    "etcd: one member named after the node; its snapshot brings the cluster back after EPHEMERAL is wiped (EtcdRecover, Bootstrap)",
    async () => {
      const c = admin();
      const members = (await c.unary(c.machine, "EtcdMemberList", {})) as {
        messages: { members: { hostname: string; is_learner: boolean }[] }[];
      };
      assert.deepEqual(
        members.messages[0]!.members.map((m) => [m.hostname, m.is_learner]),
        [[hostname, false]],
      );
      const before = await clusterObjects();
      const snapshot = (await c.collect<{ bytes?: Buffer }>(c.machine, "EtcdSnapshot", {}, 300_000)).map(
        (m) => m.bytes ?? Buffer.alloc(0),
      );
      // talosctl's disaster recovery: reset without leaving etcd, EPHEMERAL (and so /var/lib/etcd) wiped.
      const from = node.console().length;
      await c.reset({ wipe: ["EPHEMERAL"], reboot: true, graceful: false });
      await waitFor(
        node,
        "etcd's bootstrap hint after the wipe",
        async () => assert.match(node.console().slice(from), /please run `talosctl bootstrap`/),
        bootMs,
      );
      const after = admin();
      await after.upload(after.machine, "EtcdRecover", snapshot);
      await after.unary(after.machine, "Bootstrap", { recover_etcd: true }, 120_000);
      await expectServicesHealthy(node, after, ["etcd"], controlPlaneMs);
      // The same objects, not new ones: a node that registered again would have a new uid.
      const restored = await waitFor(node, "the API server on the restored etcd", clusterObjects, controlPlaneMs);
      assert.deepEqual(restored, before);
    },
  );

  await step("Shutdown stops the kubelet and the control plane's pods, then powers off", async () => {
    const c = admin();
    const from = node.console().length;
    await c.shutdown();
    await waitExit(node, "power-off after Shutdown", bootMs);
    const console = node.console().slice(from);
    assert.match(console, /shutting down kubelet gracefully/);
    for (const pod of staticPods) assert.match(console, new RegExp(`stopped pod.*kube-system/${pod}-${hostname}`));
    finished = true;
  });
});
