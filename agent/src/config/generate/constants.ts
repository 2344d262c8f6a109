// Defaults `gen config` writes (reference §6). The installer image is ours: the
// node installs Basalt, so the default points at Basalt's installer, defined here
// and nowhere else.

/** Version of the Basalt installer the generated configs point at. */
export const basaltVersion = "v0.1.0";
/** Default `machine.install.image`. */
export const defaultInstallImage = `basalt/installer:${basaltVersion}`;
/** Default `machine.install.disk` (as talosctl's `--install-disk` default). */
export const defaultInstallDisk = "/dev/sda";
/** Kubernetes version written into image tags when none is given. */
export const defaultKubernetesVersion = "1.30.3";
export const kubeletImageRepository = "ghcr.io/siderolabs/kubelet";
export const kubernetesImageRegistry = "registry.k8s.io";
export const defaultDnsDomain = "cluster.local";
export const defaultPodSubnets = ["10.244.0.0/16"];
export const defaultServiceSubnets = ["10.96.0.0/12"];
export const kubePrismPort = 7445;
/** Roles of the talosconfig client certificate. */
export const defaultClientRoles = ["os:admin"];
