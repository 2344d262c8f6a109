// etcd and the kubelet as Talos runs them: each from its image, pulled through the registry
// mirrors, as a task in the CRI containerd's `system` namespace. etcd's service comes from
// etcdWiring with this runner; the kubelet's is started and restarted by its controller.
import path from "node:path";
import type { KubeletServiceControllerOptions } from "../controllers/k8s/kubelet-service.js";
import { describeError } from "../errors.js";
import { logger } from "../log.js";
import type { ResourceState } from "../resources/state.js";
import { ImageRunner } from "../services/containerd/image-runner.js";
import { SYSTEM_NAMESPACE } from "../services/containerd/runner.js";
import { etcdImageRunner } from "../services/definitions/etcd-image.js";
import { etcdutlImage } from "../services/definitions/etcdutl-image.js";
import type { EtcdRunnerFactory } from "../services/definitions/etcd.js";
import { kubeletImageProcess, kubeletService, type KubeletProcess } from "../services/definitions/kubelet.js";
import type { Registries } from "../services/images/registry.js";
import type { ServiceRunner } from "../services/service.js";
import type { Supervisor } from "../services/supervisor.js";
import { boundingCapabilities } from "../sys/capabilities.js";
import { etcdPaths } from "../sys/etcd/paths.js";
import type { EtcdutlFactory } from "../sys/etcd/restore.js";
import type { Paths } from "../sys/paths.js";
import type { CriRuntime } from "./cri.js";

const log = logger("machined");

export interface KubernetesServicesOptions {
  cri: CriRuntime;
  supervisor: Supervisor;
  state: ResourceState;
  paths: Paths;
  /** `.machine.registries` of the active configuration. */
  registries: () => Registries | undefined;
  /** talos.environment= and `.machine.env`. */
  env: () => string[];
  /** machined runs in a container (the sandbox), where EPHEMERAL is always there. */
  container: boolean;
}

export interface KubernetesServices {
  etcdRunner: EtcdRunnerFactory;
  /** A restore's etcdutl: one-shot tasks of etcd's image. */
  etcdutl: EtcdutlFactory;
  kubelet: KubeletServiceControllerOptions;
}

export function kubernetesServices(o: KubernetesServicesOptions): KubernetesServices {
  const client = () => o.cri.containerd().inNamespace(SYSTEM_NAMESPACE);
  // Not /var/log itself: the supervisor keeps each service's log there as <id>.log.
  const logFile = (id: string) => path.join(o.paths.var, "log", "containers", `${id}.log`);
  const held = boundingCapabilities();
  const hostFiles = { hosts: path.join(o.paths.etc, "hosts"), resolvConf: path.join(o.paths.etc, "resolv.conf") };
  const kubeletRunner = (p: KubeletProcess): ServiceRunner =>
    new ImageRunner({
      id: p.id,
      image: p.image,
      client,
      registries: o.registries,
      process: async () => kubeletImageProcess(p, held, hostFiles),
      logFile: logFile(p.id),
    });
  return {
    etcdRunner: etcdImageRunner({
      client,
      registries: o.registries,
      logFile: logFile("etcd"),
      hostFiles,
      heldCapabilities: held,
    }),
    etcdutl: etcdutlImage({
      client,
      registries: o.registries,
      paths: etcdPaths(o.paths),
      outputDir: path.join(o.paths.run, "etcdutl"),
      heldCapabilities: held,
      cgroupsPath: "/system/etcd",
    }),
    kubelet: {
      root: o.paths.root,
      container: o.container,
      services: {
        isRunning: () => {
          const state = o.supervisor.get("kubelet")?.state;
          return state !== undefined && state !== "Finished";
        },
        start: async () => {
          // The kubelet waits for CRI and the network; its controller must not wait with it.
          o.supervisor
            .start(kubeletService({ state: o.state, root: o.paths.root, env: o.env, runner: kubeletRunner }))
            .catch((err: unknown) => log.error("starting the kubelet failed", { error: describeError(err) }));
        },
        stop: () => o.supervisor.stop("kubelet"),
      },
    },
  };
}
