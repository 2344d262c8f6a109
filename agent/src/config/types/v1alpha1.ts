// Typed view of the v1alpha1 machine configuration document (YAML key names of
// Talos v1.7). Every key is optional in the type because any may be absent on the
// wire; defaults.ts says what a node assumes then.

/** Free-form YAML (Kubernetes objects, kubelet extraConfig, ...). */
export type Unstructured = Record<string, unknown>;

export interface PEMCertificateAndKey {
  /** base64 of a PEM certificate */
  crt?: string;
  /** base64 of a PEM private key ("" on workers) */
  key?: string;
}

export interface Route {
  network?: string;
  gateway?: string;
  source?: string;
  metric?: number;
  mtu?: number;
}

export interface DHCPOptions {
  routeMetric?: number;
  ipv4?: boolean;
  ipv6?: boolean;
  duidv6?: string;
}

export interface VIPConfig {
  ip?: string;
  equinixMetal?: { apiToken?: string };
  hcloud?: { apiToken?: string };
}

export interface DeviceSelector {
  busPath?: string;
  hardwareAddr?: string;
  permanentAddr?: string;
  pciID?: string;
  driver?: string;
  physical?: boolean;
}

export interface Vlan {
  addresses?: string[];
  /** deprecated */
  cidr?: string;
  routes?: Route[];
  dhcp?: boolean;
  vlanId?: number;
  mtu?: number;
  vip?: VIPConfig;
  dhcpOptions?: DHCPOptions;
}

export interface Bond {
  interfaces?: string[];
  deviceSelectors?: DeviceSelector[];
  arpIPTarget?: string[];
  mode?: string;
  xmitHashPolicy?: string;
  lacpRate?: string;
  adActorSystem?: string;
  arpValidate?: string;
  arpAllTargets?: string;
  primary?: string;
  primaryReselect?: string;
  failOverMac?: string;
  adSelect?: string;
  miimon?: number;
  updelay?: number;
  downdelay?: number;
  arpInterval?: number;
  resendIgmp?: number;
  minLinks?: number;
  lpInterval?: number;
  packetsPerSlave?: number;
  numPeerNotif?: number;
  tlbDynamicLb?: number;
  allSlavesActive?: number;
  useCarrier?: boolean;
  adActorSysPrio?: number;
  adUserPortKey?: number;
  peerNotifyDelay?: number;
}

export interface WireguardPeer {
  publicKey?: string;
  endpoint?: string;
  persistentKeepaliveInterval?: string;
  allowedIPs?: string[];
}

export interface Device {
  interface?: string;
  deviceSelector?: DeviceSelector;
  addresses?: string[];
  /** deprecated: use addresses */
  cidr?: string;
  routes?: Route[];
  bond?: Bond;
  bridge?: { interfaces?: string[]; stp?: { enabled?: boolean }; vlan?: { vlanFiltering?: boolean } };
  bridgePort?: { master?: string };
  vlans?: Vlan[];
  mtu?: number;
  dhcp?: boolean;
  ignore?: boolean;
  dummy?: boolean;
  dhcpOptions?: DHCPOptions;
  wireguard?: { privateKey?: string; listenPort?: number; firewallMark?: number; peers?: WireguardPeer[] };
  vip?: VIPConfig;
}

export interface NetworkConfig {
  hostname?: string;
  interfaces?: Device[];
  nameservers?: string[];
  searchDomains?: string[];
  extraHostEntries?: { ip?: string; aliases?: string[] }[];
  kubespan?: {
    enabled?: boolean;
    advertiseKubernetesNetworks?: boolean;
    allowDownPeerBypass?: boolean;
    harvestExtraEndpoints?: boolean;
    mtu?: number;
    filters?: { endpoints?: string[] };
  };
  disableSearchDomain?: boolean;
}

export interface ExtraMount {
  destination?: string;
  type?: string;
  source?: string;
  options?: string[];
  uidMappings?: { containerID?: number; hostID?: number; size?: number }[];
  gidMappings?: { containerID?: number; hostID?: number; size?: number }[];
}

export interface KubeletConfig {
  image?: string;
  clusterDNS?: string[];
  extraArgs?: Record<string, string>;
  extraMounts?: ExtraMount[];
  extraConfig?: Unstructured;
  credentialProviderConfig?: Unstructured;
  defaultRuntimeSeccompProfileEnabled?: boolean;
  registerWithFQDN?: boolean;
  nodeIP?: { validSubnets?: string[] };
  skipNodeRegistration?: boolean;
  disableManifestsDirectory?: boolean;
}

export interface InstallDiskSelector {
  /** "4GB", ">= 1TB", "<= 2TB" or a byte count */
  size?: string | number;
  name?: string;
  model?: string;
  serial?: string;
  modalias?: string;
  uuid?: string;
  wwid?: string;
  type?: "ssd" | "hdd" | "nvme" | "sd";
  busPath?: string;
}

export interface InstallConfig {
  disk?: string;
  diskSelector?: InstallDiskSelector;
  extraKernelArgs?: string[];
  image?: string;
  /** deprecated */
  extensions?: { image?: string }[];
  bootloader?: boolean;
  wipe?: boolean;
  legacyBIOSSupport?: boolean;
}

export interface MachineFile {
  content?: string;
  /** octal file mode as a number (0o644 = 420) */
  permissions?: number;
  path?: string;
  op?: "create" | "append" | "overwrite";
}

export interface EncryptionConfig {
  provider?: string;
  keys?: {
    static?: { passphrase?: string };
    nodeID?: Record<string, never>;
    kms?: { endpoint?: string };
    slot?: number;
    tpm?: { checkSecurebootStatusOnEnroll?: boolean };
  }[];
  cipher?: string;
  keySize?: number;
  blockSize?: number;
  options?: string[];
}

export interface FeaturesConfig {
  rbac?: boolean;
  stableHostname?: boolean;
  kubernetesTalosAPIAccess?: { enabled?: boolean; allowedRoles?: string[]; allowedKubernetesNamespaces?: string[] };
  apidCheckExtKeyUsage?: boolean;
  diskQuotaSupport?: boolean;
  kubePrism?: { enabled?: boolean; port?: number };
  hostDNS?: { enabled?: boolean; forwardKubeDNSToHost?: boolean; resolveMemberNames?: boolean };
}

export type MachineTypeName = "init" | "controlplane" | "worker";

export interface MachineConfig {
  /** "init" | "controlplane" | "worker"; "join" and "" are accepted and mean worker */
  type?: MachineTypeName | "join" | "";
  token?: string;
  ca?: PEMCertificateAndKey;
  acceptedCAs?: PEMCertificateAndKey[];
  certSANs?: string[];
  controlPlane?: { controllerManager?: { disabled?: boolean }; scheduler?: { disabled?: boolean } };
  kubelet?: KubeletConfig;
  pods?: Unstructured[];
  network?: NetworkConfig;
  disks?: { device?: string; partitions?: { size?: string | number; mountpoint?: string }[] }[];
  install?: InstallConfig;
  files?: MachineFile[];
  env?: Record<string, string>;
  time?: { disabled?: boolean; servers?: string[]; bootTimeout?: string };
  sysctls?: Record<string, string>;
  sysfs?: Record<string, string>;
  registries?: {
    mirrors?: Record<string, { endpoints?: string[]; overridePath?: boolean; skipFallback?: boolean }>;
    config?: Record<
      string,
      {
        tls?: { clientIdentity?: PEMCertificateAndKey; ca?: string; insecureSkipVerify?: boolean };
        auth?: { username?: string; password?: string; auth?: string; identityToken?: string };
      }
    >;
  };
  systemDiskEncryption?: { state?: EncryptionConfig; ephemeral?: EncryptionConfig };
  features?: FeaturesConfig;
  udev?: { rules?: string[] };
  logging?: { destinations?: { endpoint?: string; format?: "json_lines"; extraTags?: Record<string, string> }[] };
  kernel?: { modules?: { name?: string; parameters?: string[] }[] };
  seccompProfiles?: { name?: string; value?: Unstructured }[];
  nodeLabels?: Record<string, string>;
  nodeTaints?: Record<string, string>;
}

export interface ControlPlaneComponent {
  image?: string;
  extraArgs?: Record<string, string>;
  extraVolumes?: { hostPath?: string; mountPath?: string; readonly?: boolean }[];
  env?: Record<string, string>;
  resources?: { requests?: Unstructured; limits?: Unstructured };
}

export interface ClusterConfig {
  id?: string;
  secret?: string;
  controlPlane?: { endpoint?: string; localAPIServerPort?: number } | null;
  clusterName?: string;
  network?: {
    cni?: { name?: "flannel" | "custom" | "none"; urls?: string[]; flannel?: { extraArgs?: string[] } };
    dnsDomain?: string;
    podSubnets?: string[];
    serviceSubnets?: string[];
  };
  token?: string;
  aescbcEncryptionSecret?: string;
  secretboxEncryptionSecret?: string;
  ca?: PEMCertificateAndKey;
  acceptedCAs?: PEMCertificateAndKey[];
  aggregatorCA?: PEMCertificateAndKey;
  serviceAccount?: { key?: string };
  apiServer?: ControlPlaneComponent & {
    certSANs?: string[];
    disablePodSecurityPolicy?: boolean;
    admissionControl?: { name?: string; configuration?: Unstructured }[];
    auditPolicy?: Unstructured;
  };
  controllerManager?: ControlPlaneComponent;
  proxy?: { disabled?: boolean; image?: string; mode?: string; extraArgs?: Record<string, string> };
  scheduler?: ControlPlaneComponent & { config?: Unstructured };
  discovery?: {
    enabled?: boolean;
    registries?: { kubernetes?: { disabled?: boolean }; service?: { disabled?: boolean; endpoint?: string } };
  };
  etcd?: {
    image?: string;
    ca?: PEMCertificateAndKey;
    extraArgs?: Record<string, string>;
    subnet?: string;
    advertisedSubnets?: string[];
    listenSubnets?: string[];
  };
  coreDNS?: { disabled?: boolean; image?: string };
  externalCloudProvider?: { enabled?: boolean; manifests?: string[] };
  extraManifests?: string[];
  extraManifestHeaders?: Record<string, string>;
  inlineManifests?: { name?: string; contents?: string }[];
  adminKubeconfig?: { certLifetime?: string };
  /** deprecated: allowSchedulingOnControlPlanes */
  allowSchedulingOnMasters?: boolean;
  allowSchedulingOnControlPlanes?: boolean;
}

export interface V1Alpha1Config {
  version?: "v1alpha1";
  debug?: boolean;
  persist?: boolean;
  machine?: MachineConfig | null;
  cluster?: ClusterConfig | null;
}
