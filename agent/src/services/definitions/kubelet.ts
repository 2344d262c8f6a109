// The kubelet service, as Talos v1.7 runs it: from its image (KubeletSpec's) in the
// system containerd's `system` namespace, host network and PID namespaces, every device
// and capability, cgroup /podruntime/kubelet, OOM score -450, restarted whenever it
// exits; it waits for CRI, the time sync and the network, and for KubeletSpec and
// KubeletSecrets. Before each start it writes its configuration file, the bootstrap
// kubeconfig and the Kubernetes CA. How a process is run from an image is injected:
// kubeletProcess() is the process as data.

import { promises as fs } from "node:fs";
import path from "node:path";
import { describeError, NotFoundError, SystemError } from "../../errors.js";
import {
  K8S_NAMESPACE,
  KubeletId,
  KubeletSecretsType,
  KubeletSpecType,
  type KubeletSecretsSpec,
  type KubeletSpecSpec,
  type Mount,
} from "../../resources/catalog/k8s-kubelet.js";
import { SECRETS_NAMESPACE } from "../../resources/catalog/secrets.js";
import type { ResourceState } from "../../resources/state.js";
import { allOf, networkReady, resourceExists, timeSynced } from "../conditions.js";
import type { ImageProcessSpec } from "../containerd/image-runner.js";
import type { ServiceDefinition, ServiceRunner } from "../service.js";
import { kubeletConfigFile } from "./kubelet-files.js";

export const KUBELET_CGROUP = "/podruntime/kubelet";
export const KUBELET_OOM_SCORE_ADJ = -450;
export const KUBELET_HEALTHZ = "http://127.0.0.1:10248/healthz";

export interface KubeletMount {
  destination: string;
  type: string;
  source: string;
  options: string[];
}

/** Everything the image runner needs to start the kubelet: pure data. */
export interface KubeletProcess {
  id: "kubelet";
  image: string;
  /** The containerd namespace (Talos's system services: `system`). */
  namespace: "system";
  args: string[];
  env: string[];
  mounts: KubeletMount[];
  user: { uid: 0; gid: 0 };
  cgroup: string;
  oomScoreAdj: number;
  rootfsPropagation: "shared";
  hostNetwork: true;
  hostPid: true;
  /** Every device allowed, sysfs and cgroupfs writable, nothing masked or read-only, no SELinux/AppArmor label. */
  privileged: true;
  /** Every capability machined may grant. */
  capabilities: "all-grantable";
  /** Syscalls allowed beyond the default seccomp profile (cephfs mounts need the key calls). */
  extraSeccompSyscalls: string[];
}

const bind = (p: string, options: string[], source = p): KubeletMount => ({
  destination: p,
  type: "bind",
  source,
  options,
});
const rshared = ["rbind", "rshared", "rw"];
const ro = ["bind", "ro"];

/** Talos's kubelet mounts, in its order. */
export const kubeletMounts: readonly KubeletMount[] = [
  bind("/dev", rshared),
  { destination: "/sys", type: "sysfs", source: "/sys", options: ro },
  bind("/sys/fs/cgroup", rshared),
  bind("/lib/modules", ro),
  bind("/etc/kubernetes", ["bind", "rshared", "rw"]),
  bind("/usr/local/lib/kubelet/credentialproviders", ro),
  bind("/etc/nfsmount.conf", ro),
  bind("/etc/machine-id", ro),
  bind("/etc/os-release", ro),
  bind("/system/resolved/resolv.conf", ro),
  bind("/etc/cni", rshared),
  bind("/usr/libexec/kubernetes", rshared),
  bind("/var/run", rshared, "/run"),
  bind("/var/lib/containerd", rshared),
  bind("/var/lib/kubelet", rshared),
  bind("/var/log/containers", rshared),
  bind("/var/log/pods", rshared),
];

const asMount = (m: Mount): KubeletMount => ({
  destination: m.destination,
  type: m.type,
  source: m.source,
  options: [...m.options],
});

/** The kubelet's process for a KubeletSpec; `env`: machined's user environment (kernel args and `.machine.env`). */
export function kubeletProcess(spec: KubeletSpecSpec, env: readonly string[]): KubeletProcess {
  return {
    id: "kubelet",
    image: spec.image,
    namespace: "system",
    args: ["/usr/local/bin/kubelet", ...spec.args],
    env: [...env],
    mounts: [...kubeletMounts, ...spec.extraMounts.map(asMount)],
    user: { uid: 0, gid: 0 },
    cgroup: KUBELET_CGROUP,
    oomScoreAdj: KUBELET_OOM_SCORE_ADJ,
    rootfsPropagation: "shared",
    hostNetwork: true,
    hostPid: true,
    privileged: true,
    capabilities: "all-grantable",
    extraSeccompSyscalls: ["add_key", "request_key"],
  };
}

/** A file the kubelet reads; no content: the file must not exist. */
export interface KubeletFile {
  path: string;
  content?: string;
  mode: number;
}

/**
 * The kubelet's process in the image runner's terms: devices are all allowed and no seccomp
 * profile applies there; cgroupfs is writable through its rshared bind mount. The host's
 * /etc/hosts and resolv.conf are bound in, as for every service Talos runs from an image:
 * the kubelet copies /etc/hosts into host-network pods.
 */
export function kubeletImageProcess(
  p: KubeletProcess,
  heldCapabilities: ReadonlySet<string>,
  hostFiles: { hosts?: string; resolvConf?: string },
): ImageProcessSpec {
  return {
    args: p.args,
    env: p.env,
    user: p.user,
    readonlyRootfs: false,
    mounts: p.mounts,
    cgroupsPath: p.cgroup,
    oomScoreAdj: p.oomScoreAdj,
    hostFiles,
    writeableSysfs: true,
    hostPid: p.hostPid,
    maskedPaths: [],
    readonlyPaths: [],
    rootfsPropagation: p.rootfsPropagation,
    heldCapabilities,
  };
}

/** The files the kubelet reads, written before each start (paths absolute on the node). */
export function kubeletFiles(spec: KubeletSpecSpec, secrets: KubeletSecretsSpec): KubeletFile[] {
  const cas = secrets.acceptedCAs.join("");
  const kubeconfig = [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: local",
    "  cluster:",
    `    server: ${secrets.endpoint}`,
    `    certificate-authority-data: ${Buffer.from(cas, "utf8").toString("base64")}`,
    "users:",
    "- name: kubelet",
    "  user:",
    `    token: ${secrets.bootstrapTokenID}.${secrets.bootstrapTokenSecret}`,
    "contexts:",
    "- context:",
    "    cluster: local",
    "    user: kubelet",
    "",
  ].join("\n");
  return [
    { path: "/etc/kubernetes/bootstrap-kubeconfig", content: kubeconfig, mode: 0o600 },
    { path: "/etc/kubernetes/pki/ca.crt", content: cas, mode: 0o400 },
    { path: "/etc/kubernetes/kubelet.yaml", content: kubeletConfigFile(spec.config), mode: 0o600 },
    {
      path: "/etc/kubernetes/kubelet-credentialproviderconfig.yaml",
      ...(spec.credentialProviderConfig ? { content: kubeletConfigFile(spec.credentialProviderConfig) } : {}),
      mode: 0o600,
    },
  ];
}

/** Writes the files under `root` ("/" on a node); directories are created 0700 as Talos creates them. */
export async function writeKubeletFiles(root: string, files: KubeletFile[]): Promise<void> {
  for (const f of files) {
    const target = path.join(root, f.path);
    if (f.content === undefined) {
      await fs.rm(target, { force: true });
      continue;
    }
    await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    // A file written 0400 before is replaced, not opened for writing.
    await fs.rm(target, { force: true });
    await fs.writeFile(target, f.content, { mode: f.mode });
    await fs.chmod(target, f.mode);
  }
}

/** The kubelet's healthz answers 200. */
export async function kubeletHealth(url = KUBELET_HEALTHZ, timeoutMs = 5000): Promise<void> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    throw new SystemError(`kubelet health check: ${url}: ${describeError(err)}`, { url }, { cause: err });
  }
  await res.body?.cancel();
  if (res.status !== 200)
    throw new SystemError(`expected HTTP status OK, got ${res.status} ${res.statusText}`, { url, status: res.status });
}

export interface KubeletServiceOptions {
  state: ResourceState;
  /** Where the node's filesystem is ("/" on a node; a directory in the sandbox). */
  root: string;
  /** machined's user environment for the kubelet. */
  env: () => readonly string[];
  /**
   * Builds the runner of one run from the process as data (its image comes from KubeletSpec,
   * so each start builds a new one): on a node, an ImageRunner of kubeletImageProcess(process).
   */
  runner: (process: KubeletProcess) => ServiceRunner;
  /** The health probe (default: GET KUBELET_HEALTHZ). */
  health?: () => Promise<void>;
}

function current(state: ResourceState): { spec: KubeletSpecSpec; secrets: KubeletSecretsSpec } {
  const spec = state.get<KubeletSpecSpec>(K8S_NAMESPACE, KubeletSpecType, KubeletId)?.spec;
  const secrets = state.get<KubeletSecretsSpec>(SECRETS_NAMESPACE, KubeletSecretsType, KubeletId)?.spec;
  if (!spec || !secrets) throw new NotFoundError(`kubelet: ${spec ? "KubeletSecrets" : "KubeletSpec"} is missing`, {});
  return { spec, secrets };
}

export function kubeletService(opts: KubeletServiceOptions): ServiceDefinition {
  const process = async () => {
    const { spec } = current(opts.state);
    // Talos creates each extra mount's source before the container starts.
    for (const m of spec.extraMounts) await fs.mkdir(path.join(opts.root, m.source), { recursive: true, mode: 0o700 });
    return kubeletProcess(spec, opts.env());
  };
  let run: ServiceRunner | undefined;
  const runner: ServiceRunner = {
    start: async (onExit, ctx) => {
      run = opts.runner(await process());
      return run.start(onExit, ctx);
    },
    stop: async () => run?.stop(),
    health: opts.health ?? (() => kubeletHealth()),
  };
  return {
    id: "kubelet",
    dependsOn: ["cri"],
    conditions: [
      allOf(
        resourceExists(opts.state, K8S_NAMESPACE, KubeletSpecType, KubeletId),
        resourceExists(opts.state, SECRETS_NAMESPACE, KubeletSecretsType, KubeletId),
        timeSynced(opts.state),
        networkReady(opts.state, "address", "hostname", "etc-files"),
      ),
    ],
    pre: async () => {
      const { spec, secrets } = current(opts.state);
      await writeKubeletFiles(opts.root, kubeletFiles(spec, secrets));
    },
    runner,
    restart: "always",
    cgroup: KUBELET_CGROUP,
    oomScoreAdj: KUBELET_OOM_SCORE_ADJ,
    api: { start: true, restart: true },
  };
}
