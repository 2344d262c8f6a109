// Builds v1alpha1 machine configuration documents with the keys, order and
// defaults `talosctl gen config` v1.7 writes (reference §6; compared against the
// v1.7 stability fixtures in tests). Control-plane documents carry every CA with
// its key; worker documents carry only the OS and Kubernetes CA certificates.
import { stringify } from "yaml";
import { InvalidInputError } from "../../errors.js";
import { pemToBase64 } from "../../pki/index.js";
import {
  defaultDnsDomain,
  defaultInstallDisk,
  defaultInstallImage,
  defaultPodSubnets,
  defaultServiceSubnets,
  kubePrismPort,
} from "./constants.js";
import { parseClusterEndpoint, type ClusterEndpoint } from "./endpoint.js";
import { kubernetesImages, normalizeKubernetesVersion } from "./kubernetes.js";
import type { PemPair, SecretsBundle } from "./secrets.js";

export type MachineType = "init" | "controlplane" | "worker";

export interface KubeletExtraMount {
  destination: string;
  type: string;
  source: string;
  options?: string[];
}

/** Cluster-wide generation inputs (what `gen config` flags and GenerateConfiguration carry). */
export interface ClusterOptions {
  clusterName: string;
  /** `https://host:port` of the Kubernetes API. */
  endpoint: string;
  kubernetesVersion?: string;
  /** Default `/dev/sda`; an empty string leaves `machine.install.disk` out. */
  installDisk?: string;
  /** Default: Basalt's installer image (constants.ts); an empty string leaves it out. */
  installImage?: string;
  installExtraKernelArgs?: string[];
  /** Go to `machine.certSANs` and (after the endpoint host) `cluster.apiServer.certSANs`. */
  additionalSANs?: string[];
  dnsDomain?: string;
  podSubnets?: string[];
  serviceSubnets?: string[];
  cni?: { name: string; urls?: string[] };
  localAPIServerPort?: number;
  allowSchedulingOnControlPlanes?: boolean;
  sysctls?: Record<string, string>;
  registryMirrors?: Record<string, { endpoints: string[] }>;
  kubeletExtraMounts?: KubeletExtraMount[];
  debug?: boolean;
  persist?: boolean;
}

export interface NetworkInterfaceOptions {
  interface: string;
  addresses?: string[];
  mtu?: number;
  dhcp?: boolean;
  ignore?: boolean;
  dhcpOptions?: { routeMetric?: number };
  routes?: { network: string; gateway?: string; metric?: number }[];
}

/** Per-machine inputs (GenerateConfiguration's `machine_config.network_config`). */
export interface MachineOptions {
  hostname?: string;
  interfaces?: NetworkInterfaceOptions[];
}

type Obj = Record<string, unknown>;

function caEntry(pair: PemPair, withKey: boolean): Obj {
  return { crt: pemToBase64(pair.crt), key: withKey ? pemToBase64(pair.key) : "" };
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values.filter((v) => v !== ""))];
}

function networkSection(machine: MachineOptions): Obj {
  const network: Obj = {};
  if (machine.hostname) network.hostname = machine.hostname;
  if (machine.interfaces && machine.interfaces.length > 0) {
    network.interfaces = machine.interfaces.map((i) => {
      const out: Obj = { interface: i.interface };
      if (i.addresses && i.addresses.length > 0) out.addresses = [...i.addresses];
      if (i.routes && i.routes.length > 0) {
        out.routes = i.routes.map((r) => {
          const route: Obj = { network: r.network };
          if (r.gateway) route.gateway = r.gateway;
          if (r.metric) route.metric = r.metric;
          return route;
        });
      }
      if (i.mtu) out.mtu = i.mtu;
      if (i.dhcp) out.dhcp = true;
      if (i.ignore) out.ignore = true;
      if (i.dhcpOptions?.routeMetric) out.dhcpOptions = { routeMetric: i.dhcpOptions.routeMetric };
      return out;
    });
  }
  return network;
}

// The PodSecurity admission defaults and the audit policy of generated control-plane configs.
function admissionControl(): Obj[] {
  return [
    {
      name: "PodSecurity",
      configuration: {
        apiVersion: "pod-security.admission.config.k8s.io/v1alpha1",
        defaults: {
          audit: "restricted",
          "audit-version": "latest",
          enforce: "baseline",
          "enforce-version": "latest",
          warn: "restricted",
          "warn-version": "latest",
        },
        exemptions: { namespaces: ["kube-system"], runtimeClasses: [], usernames: [] },
        kind: "PodSecurityConfiguration",
      },
    },
  ];
}

function auditPolicy(): Obj {
  return { apiVersion: "audit.k8s.io/v1", kind: "Policy", rules: [{ level: "Metadata" }] };
}

/** Checks the inputs every document needs; throws InvalidInputError with a clear message. */
export function checkClusterOptions(options: ClusterOptions): { endpoint: ClusterEndpoint; kubernetesVersion: string } {
  if (!options.clusterName || options.clusterName.trim() === "")
    throw new InvalidInputError("cluster name is required");
  return {
    endpoint: parseClusterEndpoint(options.endpoint),
    kubernetesVersion: normalizeKubernetesVersion(options.kubernetesVersion),
  };
}

/** The v1alpha1 document for one machine type, as a plain object in `gen config` key order. */
export function machineConfigDocument(
  type: MachineType,
  options: ClusterOptions,
  secrets: SecretsBundle,
  machine: MachineOptions = {},
): Obj {
  const { endpoint, kubernetesVersion } = checkClusterOptions(options);
  const images = kubernetesImages(kubernetesVersion);
  const controlPlane = type !== "worker";
  const additionalSANs = unique(options.additionalSANs ?? []);

  const kubelet: Obj = { image: images.kubelet };
  if (options.kubeletExtraMounts && options.kubeletExtraMounts.length > 0) {
    kubelet.extraMounts = options.kubeletExtraMounts.map((m) => ({
      ...m,
      ...(m.options ? { options: [...m.options] } : {}),
    }));
  }
  kubelet.defaultRuntimeSeccompProfileEnabled = true;
  kubelet.disableManifestsDirectory = true;

  const install: Obj = {};
  const installDisk = options.installDisk ?? defaultInstallDisk;
  if (installDisk !== "") install.disk = installDisk;
  if (options.installExtraKernelArgs && options.installExtraKernelArgs.length > 0) {
    install.extraKernelArgs = [...options.installExtraKernelArgs];
  }
  const installImage = options.installImage ?? defaultInstallImage;
  if (installImage !== "") install.image = installImage;
  install.wipe = false;

  const machineSection: Obj = {
    type,
    token: secrets.trustdInfo.token,
    ca: caEntry(secrets.certs.os, controlPlane),
    certSANs: additionalSANs,
    kubelet,
    network: networkSection(machine),
    install,
  };
  if (options.sysctls && Object.keys(options.sysctls).length > 0) machineSection.sysctls = { ...options.sysctls };
  if (options.registryMirrors && Object.keys(options.registryMirrors).length > 0) {
    machineSection.registries = {
      mirrors: Object.fromEntries(
        Object.entries(options.registryMirrors).map(([host, m]) => [host, { endpoints: [...m.endpoints] }]),
      ),
    };
  }
  machineSection.features = {
    rbac: true,
    stableHostname: true,
    apidCheckExtKeyUsage: true,
    diskQuotaSupport: true,
    kubePrism: { enabled: true, port: kubePrismPort },
    hostDNS: { enabled: true },
  };

  const clusterNetwork: Obj = {};
  if (options.cni) {
    clusterNetwork.cni = {
      name: options.cni.name,
      ...(options.cni.urls && options.cni.urls.length > 0 ? { urls: [...options.cni.urls] } : {}),
    };
  }
  clusterNetwork.dnsDomain = options.dnsDomain || defaultDnsDomain;
  clusterNetwork.podSubnets = [...(options.podSubnets ?? defaultPodSubnets)];
  clusterNetwork.serviceSubnets = [...(options.serviceSubnets ?? defaultServiceSubnets)];

  const controlPlaneSection: Obj = { endpoint: endpoint.url };
  if (controlPlane && options.localAPIServerPort) controlPlaneSection.localAPIServerPort = options.localAPIServerPort;

  const discovery = { enabled: true, registries: { kubernetes: { disabled: true }, service: {} } };

  let cluster: Obj;
  if (controlPlane) {
    cluster = {
      id: secrets.cluster.id,
      secret: secrets.cluster.secret,
      controlPlane: controlPlaneSection,
      clusterName: options.clusterName,
      network: clusterNetwork,
      token: secrets.secrets.bootstrapToken,
      ...(secrets.secrets.aescbcEncryptionSecret
        ? { aescbcEncryptionSecret: secrets.secrets.aescbcEncryptionSecret }
        : {}),
      secretboxEncryptionSecret: secrets.secrets.secretboxEncryptionSecret,
      ca: caEntry(secrets.certs.k8s, true),
      aggregatorCA: caEntry(secrets.certs.k8sAggregator, true),
      serviceAccount: { key: pemToBase64(secrets.certs.k8sServiceAccount.key) },
      apiServer: {
        image: images.apiServer,
        certSANs: unique([endpoint.host, ...additionalSANs]),
        disablePodSecurityPolicy: true,
        admissionControl: admissionControl(),
        auditPolicy: auditPolicy(),
      },
      controllerManager: { image: images.controllerManager },
      proxy: { image: images.proxy },
      scheduler: { image: images.scheduler },
      discovery,
      etcd: { ca: caEntry(secrets.certs.etcd, true) },
    };
    if (options.allowSchedulingOnControlPlanes) cluster.allowSchedulingOnControlPlanes = true;
  } else {
    cluster = {
      id: secrets.cluster.id,
      secret: secrets.cluster.secret,
      controlPlane: controlPlaneSection,
      network: clusterNetwork,
      token: secrets.secrets.bootstrapToken,
      ca: caEntry(secrets.certs.k8s, false),
      discovery,
    };
  }

  return {
    version: "v1alpha1",
    debug: options.debug ?? false,
    persist: options.persist ?? true,
    machine: machineSection,
    cluster,
  };
}

/** YAML text as `gen config` lays it out: 4-space indent, no line folding. */
export function machineConfigToYaml(document: Obj): string {
  return stringify(document, { indent: 4, lineWidth: 0, aliasDuplicateObjects: false });
}

export function machineConfigYaml(
  type: MachineType,
  options: ClusterOptions,
  secrets: SecretsBundle,
  machine: MachineOptions = {},
): string {
  return machineConfigToYaml(machineConfigDocument(type, options, secrets, machine));
}
