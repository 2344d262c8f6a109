// Shape of the v1alpha1 document (Talos v1.7 keys, YAML names). Fields marked
// `always` are the ones Talos writes even when empty; merge hints follow Talos's
// strategic-merge rules (interfaces by name/selector, vlans by id, admission plugins
// by name, pod/service subnets replaced).

import {
  always,
  any,
  bool,
  enumOf,
  int,
  list,
  map,
  obj,
  replaced,
  str,
  keyedBy,
  type ListMerge,
  type Schema,
} from "./schema.js";

// Talos writes both halves even when one is empty (`key: ""` on workers).
const pemCertAndKey = obj({ crt: always(str()), key: always(str()) });
const pemCert = obj({ crt: always(str()) });
const pemKey = obj({ key: always(str()) });
const stringMap = map(str());

/** Interfaces merge by `interface`, else by an identical `deviceSelector`. */
const deviceKey: ListMerge = {
  keyOf: (item) => {
    if (item === null || typeof item !== "object") return undefined;
    const d = item as Record<string, unknown>;
    if (typeof d.interface === "string" && d.interface !== "") return `if:${d.interface}`;
    if (d.deviceSelector && typeof d.deviceSelector === "object") {
      const sel = d.deviceSelector as Record<string, unknown>;
      return (
        "sel:" +
        JSON.stringify(
          Object.keys(sel)
            .sort()
            .map((k) => [k, sel[k]]),
        )
      );
    }
    return undefined;
  },
};

const route = obj({
  network: always(str("cidr")),
  gateway: always(str("ip")),
  source: str("ip"),
  metric: int(),
  mtu: int(),
});

const dhcpOptions = obj({ routeMetric: always(int()), ipv4: bool(), ipv6: bool(), duidv6: str() });

const vip = obj({
  ip: str("ip"),
  equinixMetal: obj({ apiToken: always(str()) }),
  hcloud: obj({ apiToken: always(str()) }),
});

const deviceSelector = obj({
  busPath: str(),
  hardwareAddr: str(),
  permanentAddr: str(),
  pciID: str(),
  driver: str(),
  physical: bool(),
});

const vlan = obj({
  addresses: list(str("ipOrCidr")),
  cidr: str("ipOrCidr"),
  routes: always(list(route)),
  dhcp: bool(),
  vlanId: always(int()),
  mtu: int(),
  vip,
  dhcpOptions,
});

const bond = obj({
  interfaces: always(list(str())),
  deviceSelectors: list(deviceSelector),
  arpIPTarget: list(str("ip")),
  mode: always(str()),
  xmitHashPolicy: str(),
  lacpRate: str(),
  adActorSystem: str(),
  arpValidate: str(),
  arpAllTargets: str(),
  primary: str(),
  primaryReselect: str(),
  failOverMac: str(),
  adSelect: str(),
  miimon: int(),
  updelay: int(),
  downdelay: int(),
  arpInterval: int(),
  resendIgmp: int(),
  minLinks: int(),
  lpInterval: int(),
  packetsPerSlave: int(),
  numPeerNotif: int(),
  tlbDynamicLb: int(),
  allSlavesActive: int(),
  useCarrier: bool(),
  adActorSysPrio: int(),
  adUserPortKey: int(),
  peerNotifyDelay: int(),
});

const device = obj({
  interface: str(),
  deviceSelector,
  addresses: list(str("ipOrCidr")),
  cidr: str("ipOrCidr"),
  routes: list(route),
  bond,
  bridge: obj({
    interfaces: always(list(str())),
    stp: obj({ enabled: bool() }),
    vlan: obj({ vlanFiltering: bool() }),
  }),
  bridgePort: obj({ master: str() }),
  vlans: list(vlan, keyedBy("vlanId")),
  mtu: int(),
  dhcp: bool(),
  ignore: bool(),
  dummy: bool(),
  dhcpOptions,
  wireguard: obj({
    privateKey: str(),
    listenPort: int(),
    firewallMark: int(),
    peers: list(
      obj({
        publicKey: str(),
        endpoint: str("hostPort"),
        persistentKeepaliveInterval: str("duration"),
        allowedIPs: list(str("cidr")),
      }),
    ),
  }),
  vip,
});

const extraMount = obj({
  destination: always(str("absPath")),
  type: str(),
  source: str(),
  options: list(str()),
  uidMappings: list(obj({ containerID: always(int()), hostID: always(int()), size: always(int()) })),
  gidMappings: list(obj({ containerID: always(int()), hostID: always(int()), size: always(int()) })),
});

const encryption = obj({
  provider: always(str()),
  keys: always(
    list(
      obj({
        static: obj({ passphrase: str() }),
        nodeID: obj({}),
        kms: obj({ endpoint: always(str("url")) }),
        slot: always(int()),
        tpm: obj({ checkSecurebootStatusOnEnroll: bool() }),
      }),
    ),
  ),
  cipher: str(),
  keySize: int(),
  blockSize: int(),
  options: list(str()),
});

const resources = obj({ requests: any(), limits: any() });
const extraVolume = obj({ hostPath: always(str()), mountPath: always(str()), readonly: bool() });

const machine = obj({
  type: always(enumOf("init", "controlplane", "worker", "join", "")),
  token: always(str()),
  ca: pemCertAndKey,
  acceptedCAs: list(pemCert),
  certSANs: always(list(str())),
  controlPlane: obj({
    controllerManager: obj({ disabled: bool() }),
    scheduler: obj({ disabled: bool() }),
  }),
  kubelet: obj({
    image: str(),
    clusterDNS: list(str("ip")),
    extraArgs: stringMap,
    extraMounts: list(extraMount),
    extraConfig: any(),
    credentialProviderConfig: any(),
    defaultRuntimeSeccompProfileEnabled: bool(),
    registerWithFQDN: bool(),
    nodeIP: obj({ validSubnets: list(str("subnetFilter")) }),
    skipNodeRegistration: bool(),
    disableManifestsDirectory: bool(),
  }),
  pods: list(any()),
  network: obj({
    hostname: str(),
    interfaces: list(device, deviceKey),
    nameservers: list(str("ip")),
    searchDomains: list(str()),
    extraHostEntries: list(obj({ ip: always(str("ip")), aliases: always(list(str())) })),
    kubespan: obj({
      enabled: bool(),
      advertiseKubernetesNetworks: bool(),
      allowDownPeerBypass: bool(),
      harvestExtraEndpoints: bool(),
      mtu: int(),
      filters: obj({ endpoints: list(str("subnetFilter")) }),
    }),
    disableSearchDomain: bool(),
  }),
  disks: list(
    obj({
      device: str(),
      partitions: list(obj({ size: any(), mountpoint: str() })),
    }),
  ),
  install: obj({
    disk: str(),
    diskSelector: obj({
      size: any(), // "4GB", ">= 1TB" or a byte count
      name: str(),
      model: str(),
      serial: str(),
      modalias: str(),
      uuid: str(),
      wwid: str(),
      type: enumOf("ssd", "hdd", "nvme", "sd"),
      busPath: str(),
    }),
    extraKernelArgs: list(str()),
    image: str(),
    extensions: list(obj({ image: always(str()) })),
    bootloader: bool(),
    wipe: always(bool()),
    legacyBIOSSupport: bool(),
  }),
  files: list(
    obj({
      content: always(str()),
      permissions: always(int()),
      path: always(str("absPath")),
      op: always(enumOf("create", "append", "overwrite")),
    }),
  ),
  env: stringMap,
  time: obj({ disabled: bool(), servers: list(str()), bootTimeout: str("duration") }),
  sysctls: stringMap,
  sysfs: stringMap,
  registries: obj({
    mirrors: map(obj({ endpoints: always(list(str("url"))), overridePath: bool(), skipFallback: bool() })),
    config: map(
      obj({
        tls: obj({ clientIdentity: pemCertAndKey, ca: str(), insecureSkipVerify: bool() }),
        auth: obj({ username: str(), password: str(), auth: str(), identityToken: str() }),
      }),
    ),
  }),
  systemDiskEncryption: obj({ state: encryption, ephemeral: encryption }),
  features: obj({
    rbac: bool(),
    stableHostname: bool(),
    kubernetesTalosAPIAccess: obj({
      enabled: bool(),
      allowedRoles: list(str()),
      allowedKubernetesNamespaces: list(str()),
    }),
    apidCheckExtKeyUsage: bool(),
    diskQuotaSupport: bool(),
    kubePrism: obj({ enabled: bool(), port: int("port") }),
    hostDNS: obj({ enabled: bool(), forwardKubeDNSToHost: bool(), resolveMemberNames: bool() }),
  }),
  udev: obj({ rules: list(str()) }),
  logging: obj({
    destinations: always(
      list(
        obj({
          endpoint: always(str("url")),
          format: always(enumOf("json_lines")),
          extraTags: stringMap,
        }),
      ),
    ),
  }),
  kernel: obj({ modules: list(obj({ name: always(str()), parameters: list(str()) })) }),
  seccompProfiles: list(obj({ name: always(str()), value: always(any()) })),
  nodeLabels: stringMap,
  nodeTaints: stringMap,
});

const controlPlaneComponent = {
  image: str(),
  extraArgs: stringMap,
  extraVolumes: list(extraVolume),
  env: stringMap,
  resources,
};

const cluster = obj({
  id: str(),
  secret: str(),
  controlPlane: always(
    obj({
      endpoint: always({ s: str(), urlMerge: true }),
      localAPIServerPort: int("port"),
    }),
  ),
  clusterName: str(),
  network: obj({
    cni: obj({
      name: enumOf("flannel", "custom", "none"),
      urls: list(str("url")),
      flannel: obj({ extraArgs: list(str()) }),
    }),
    dnsDomain: always(str()),
    podSubnets: always(replaced(list(str("cidr")))),
    serviceSubnets: always(replaced(list(str("cidr")))),
  }),
  token: str(),
  aescbcEncryptionSecret: str(),
  secretboxEncryptionSecret: str(),
  ca: pemCertAndKey,
  acceptedCAs: list(pemCert),
  aggregatorCA: pemCertAndKey,
  serviceAccount: pemKey,
  apiServer: obj({
    ...controlPlaneComponent,
    certSANs: list(str()),
    disablePodSecurityPolicy: bool(),
    admissionControl: list(obj({ name: always(str()), configuration: always(any()) }), keyedBy("name")),
    auditPolicy: replaced(any()),
  }),
  controllerManager: obj(controlPlaneComponent),
  proxy: obj({ disabled: bool(), image: str(), mode: str(), extraArgs: stringMap }),
  scheduler: obj({ ...controlPlaneComponent, config: any() }),
  discovery: obj({
    enabled: bool(),
    registries: always(
      obj(
        {
          kubernetes: always(obj({ disabled: bool() }, { struct: true })),
          service: always(obj({ disabled: bool(), endpoint: str("url") }, { struct: true })),
        },
        { struct: true },
      ),
    ),
  }),
  etcd: obj({
    image: str(),
    ca: always(pemCertAndKey),
    extraArgs: stringMap,
    subnet: str("cidr"),
    advertisedSubnets: list(str("subnetFilter")),
    listenSubnets: list(str("subnetFilter")),
  }),
  coreDNS: obj({ disabled: bool(), image: str() }),
  externalCloudProvider: obj({ enabled: bool(), manifests: list(str("url")) }),
  extraManifests: list(str("url")),
  extraManifestHeaders: stringMap,
  inlineManifests: list(obj({ name: always(str()), contents: { s: str(), always: true, trimLeft: true } })),
  adminKubeconfig: obj({ certLifetime: str("duration") }),
  allowSchedulingOnMasters: bool(),
  allowSchedulingOnControlPlanes: bool(),
});

export const v1alpha1Schema: Schema = obj({
  version: always(enumOf("v1alpha1")),
  debug: bool(),
  persist: bool(),
  machine: always(machine),
  cluster: always(cluster),
});
