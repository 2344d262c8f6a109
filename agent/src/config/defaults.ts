// What a node assumes for keys a v1alpha1 document leaves out (Talos v1.7). Applied
// to a copy on read; the stored text is never rewritten.

import type { V1Alpha1Config } from "./types/v1alpha1.js";

export const TALOS_VERSION = "v1.7.6";
export const KUBERNETES_VERSION = "v1.30.3";

export const defaults = {
  installImage: `ghcr.io/siderolabs/installer:${TALOS_VERSION}`,
  kubeletImage: `ghcr.io/siderolabs/kubelet:${KUBERNETES_VERSION}`,
  apiServerImage: `registry.k8s.io/kube-apiserver:${KUBERNETES_VERSION}`,
  controllerManagerImage: `registry.k8s.io/kube-controller-manager:${KUBERNETES_VERSION}`,
  schedulerImage: `registry.k8s.io/kube-scheduler:${KUBERNETES_VERSION}`,
  proxyImage: `registry.k8s.io/kube-proxy:${KUBERNETES_VERSION}`,
  etcdImage: "gcr.io/etcd-development/etcd:v3.5.13",
  coreDNSImage: "registry.k8s.io/coredns/coredns:v1.11.1",
  dnsDomain: "cluster.local",
  podSubnets: ["10.244.0.0/16"],
  serviceSubnets: ["10.96.0.0/12"],
  cni: "flannel",
  localAPIServerPort: 6443,
  kubePrismPort: 7445,
  timeServers: ["time.cloudflare.com"],
  discoveryServiceEndpoint: "https://discovery.talos.dev/",
} as const;

type Obj = Record<string, unknown>;

/**
 * [path, value, createMissingParents]. Parents that are absent are only created when
 * the flag says so: the presence of e.g. `machine.install` means something by itself.
 */
const table: [string[], unknown, boolean][] = [
  [["debug"], false, true],
  [["persist"], true, true],
  [["machine", "type"], "worker", false],
  [["machine", "install", "image"], defaults.installImage, false],
  [["machine", "install", "wipe"], false, false],
  [["machine", "install", "bootloader"], true, false],
  [["machine", "kubelet", "image"], defaults.kubeletImage, true],
  [["machine", "features", "rbac"], true, true],
  [["machine", "features", "stableHostname"], false, true],
  [["machine", "features", "apidCheckExtKeyUsage"], false, true],
  [["machine", "features", "diskQuotaSupport"], false, true],
  [["machine", "features", "kubePrism", "enabled"], false, true],
  [["machine", "features", "kubePrism", "port"], defaults.kubePrismPort, true],
  [["machine", "features", "hostDNS", "enabled"], false, true],
  [["machine", "features", "hostDNS", "forwardKubeDNSToHost"], false, true],
  [["machine", "features", "hostDNS", "resolveMemberNames"], false, true],
  [["machine", "time", "servers"], defaults.timeServers, true],
  [["cluster", "controlPlane", "localAPIServerPort"], defaults.localAPIServerPort, false],
  [["cluster", "network", "dnsDomain"], defaults.dnsDomain, false],
  [["cluster", "network", "podSubnets"], defaults.podSubnets, false],
  [["cluster", "network", "serviceSubnets"], defaults.serviceSubnets, false],
  [["cluster", "network", "cni", "name"], defaults.cni, false],
  [["cluster", "apiServer", "image"], defaults.apiServerImage, false],
  [["cluster", "controllerManager", "image"], defaults.controllerManagerImage, false],
  [["cluster", "scheduler", "image"], defaults.schedulerImage, false],
  [["cluster", "proxy", "image"], defaults.proxyImage, false],
  [["cluster", "etcd", "image"], defaults.etcdImage, false],
  [["cluster", "coreDNS", "image"], defaults.coreDNSImage, false],
  [["cluster", "discovery", "registries", "service", "endpoint"], defaults.discoveryServiceEndpoint, false],
];

function clone<T>(v: T): T {
  return structuredClone(v);
}

/** A deep copy of `doc` with defaults filled in where keys are absent. */
export function applyDefaults(doc: V1Alpha1Config): V1Alpha1Config {
  const out = clone(doc) as Obj;
  for (const [path, value, create] of table) {
    // machine/cluster themselves are never invented: they mean "instructions given".
    if (path.length > 1 && (out[path[0]] === undefined || out[path[0]] === null)) continue;
    let cur: Obj = out;
    let ok = true;
    for (const key of path.slice(0, -1)) {
      const next = cur[key];
      if (next === undefined || next === null) {
        if (!create) {
          ok = false;
          break;
        }
        cur[key] = {};
      }
      cur = cur[key] as Obj;
    }
    const last = path[path.length - 1];
    if (ok && (cur[last] === undefined || cur[last] === null)) cur[last] = clone(value);
  }
  return out as V1Alpha1Config;
}
