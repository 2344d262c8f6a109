// The namespaces a Talos v1.7 node serves (cosi-state.md §7), with their descriptions.

export interface NamespaceInput {
  name: string;
  description: string;
}

export const namespaces: readonly NamespaceInput[] = [
  { name: "meta", description: "Metadata namespace which contains resource and namespace definitions." },
  { name: "cluster", description: "Cluster configuration and discovery resources." },
  { name: "cluster-raw", description: "Cluster unmerged raw resources." },
  { name: "config", description: "Talos node configuration." },
  { name: "controlplane", description: "Kubernetes control plane resources." },
  { name: "cri", description: "CRI Seccomp resources." },
  { name: "etcd", description: "etcd resources." },
  { name: "files", description: "Files and file-like resources." },
  { name: "hardware", description: "Hardware resources." },
  { name: "k8s", description: "Kubernetes all node types resources." },
  { name: "kubespan", description: "KubeSpan resources." },
  { name: "network", description: "Networking resources." },
  { name: "network-config", description: "Networking configuration resources." },
  { name: "perf", description: "Stats resources." },
  // Talos's v1alpha1 namespace constant is "runtime".
  { name: "runtime", description: "Talos v1alpha1 subsystems glue resources." },
  { name: "secrets", description: "Resources with secret material." },
];
