// machined's one registration list: every controller of the node, each declaring its
// inputs and the single type it writes (Talos's v1alpha2_controller.go list).

import type { ConfigBundle } from "../config/bundle.js";
import type { Controller } from "../resources/controller-runtime.js";
import type { MachineStage, PlatformMetadataSpec } from "../resources/catalog/runtime.js";
import type { MountedVolume } from "../storage/volumes.js";
import type { KernelParams } from "../sys/kernel-params.js";
import type { KernelModules } from "../sys/kernel-modules.js";
import type { SmbiosReader } from "../sys/smbios.js";
import { SystemInfoController } from "./hardware/system-info.js";
import { KernelParamConfigController } from "./runtime/kernel-param-config.js";
import { KernelParamDefaultsController } from "./runtime/kernel-param-defaults.js";
import { KernelParamSpecController } from "./runtime/kernel-param-spec.js";
import { KernelModuleConfigController } from "./runtime/kernel-module-config.js";
import { KernelModuleSpecController } from "./runtime/kernel-module-spec.js";
import { MachineConfigController } from "./config/machine-config.js";
import { MachineTypeController } from "./config/machine-type.js";
import { ExtensionStatusController } from "./runtime/extension-status.js";
import { MachineStatusController, type RequiredServices } from "./runtime/machine-status.js";
import { MetaKeysController } from "./runtime/meta-keys.js";
import { MountStatusController } from "./runtime/mount-status.js";
import { PlatformMetadataController } from "./runtime/platform-metadata.js";
import {
  PlatformConfigController,
  type PlatformNetwork,
  type PlatformNetworkCache,
} from "./runtime/platform-network.js";
import { ServiceController, type ServiceStatuses } from "./runtime/service.js";
import type { Source } from "./runtime/source.js";
import { secretsControllers, type SecretsOptions } from "./secrets/index.js";
import { AddressEventController, type AddressEvent } from "./network/address-event.js";
import { TimeSyncController, type TimeSyncOptions } from "./time/sync.js";
import { AdjtimeStatusController } from "./time/adjtime-status.js";
import { DNSResolveCacheController } from "./network/dns-resolve-cache.js";
import { HostDNSConfigController } from "./network/host-dns-config.js";
import { DevicesStatusController } from "./runtime/devices-status.js";
import { SecurityStateController } from "./runtime/security-state.js";
import { NodeIdentityController, type NodeIdentityOptions } from "./cluster/node-identity.js";
import { etcdControllers, type EtcdControllersOptions } from "./etcd/index.js";
import { ManifestController } from "./k8s/manifest.js";
import { ExtraManifestController } from "./k8s/extra-manifest.js";
import { ManifestApplyController, type ClusterLock } from "./k8s/manifest-apply.js";
import { controlPlaneControllers } from "./k8s/control-plane.js";
import { kubeletControllers } from "./k8s/index.js";
import type { KubeletServiceControllerOptions } from "./k8s/kubelet-service.js";
import { nodeControllers } from "./k8s/node-controllers.js";
import { SeccompProfileController } from "./cri/seccomp-profile.js";
import { SeccompProfileFileController } from "./cri/seccomp-profile-file.js";

/** What machined reports to its controllers: the facts only its sequences and supervisor know. */
export interface MachinedSources {
  activeConfig: Source<ConfigBundle | undefined>;
  stage: Source<MachineStage>;
  volumes: Source<ReadonlyMap<string, MountedVolume>>;
  metaKeys: Source<ReadonlyMap<number, string>>;
  platformMetadata: Source<PlatformMetadataSpec | undefined>;
  platformNetwork: Source<PlatformNetwork | undefined>;
  services: ServiceStatuses;
  requiredServices: RequiredServices;
}

export interface ControllersOptions {
  sources: MachinedSources;
  secrets: SecretsOptions;
  /** The networking controllers (DHCP on a node, observe-only in the sandbox), built by the caller. */
  network: Controller[];
  /** The kernel's parameters (sysctls, sysfs); `container`: the sandbox, with Talos's container-mode defaults. */
  kernelParams: { params: KernelParams; container: boolean };
  /** Where `.machine.kernel.modules` are loaded (the sandbox: recorded, never loaded into the host). */
  kernelModules: KernelModules;
  /** The firmware's SMBIOS table; absent in the sandbox (as Talos reads none in a container). */
  smbios?: SmbiosReader;
  /** Where machine.AddressEvents go (the Events stream). */
  addressEvents?: (event: AddressEvent) => void;
  /** Reads the image's extensions.yaml (undefined: no extensions). */
  extensions?: () => Promise<string | undefined>;
  /** The clock the time sync adjusts (none: sync disabled, as Talos in a container). */
  time?: TimeSyncOptions;
  /** Where the platform's network is kept between boots (Talos's STATE/platform-network.yaml). */
  platformNetworkCache?: PlatformNetworkCache;
  /** Where the host DNS cache listens (a node: 127.0.0.53:53); absent: no host DNS cache (the sandbox unless asked). */
  hostDns?: { listen: string };
  /** Whether machined runs udevd (a node): the devices are ready once it is healthy; otherwise at once. */
  udevd: boolean;
  /** etcd's controllers (secrets, config, spec, PKI on disk, local member); absent: none run. */
  etcd?: EtcdControllersOptions;
  /** The cluster-wide lock the bootstrap manifests are applied under (absent: rendered, not applied). */
  manifestApplyLock?: ClusterLock;
  /** Where the node identity is kept and /etc/machine-id written. */
  nodeIdentity: NodeIdentityOptions;
  /** Starts and restarts the kubelet service (absent: no kubelet runs, as where no CRI runs). */
  kubelet?: KubeletServiceControllerOptions;
  /** The kubelet's seccomp profiles directory on this node (/var/lib/kubelet/seccomp/profiles on a node). */
  seccompProfilesDirectory: string;
}

export function machinedControllers(opts: ControllersOptions): Controller[] {
  const s = opts.sources;
  return [
    ...opts.network,
    ...(opts.addressEvents ? [new AddressEventController(opts.addressEvents)] : []),
    new MachineConfigController(s.activeConfig),
    new MachineTypeController(),
    new MachineStatusController(s.stage, s.requiredServices),
    new ServiceController(s.services),
    new DevicesStatusController({ udevd: opts.udevd }),
    new SecurityStateController({ container: opts.kernelParams.container }),
    new MountStatusController(s.volumes),
    new MetaKeysController(s.metaKeys),
    ...(opts.extensions ? [new ExtensionStatusController(opts.extensions)] : []),
    new PlatformMetadataController(s.platformMetadata),
    new PlatformConfigController(s.platformNetwork, opts.platformNetworkCache),
    ...secretsControllers(opts.secrets),
    new KernelParamConfigController(),
    new KernelParamDefaultsController(opts.kernelParams.params, opts.kernelParams.container, opts.kernelModules),
    new KernelParamSpecController(opts.kernelParams.params),
    new KernelModuleConfigController(),
    new KernelModuleSpecController(opts.kernelModules),
    ...(opts.smbios ? [new SystemInfoController(opts.smbios)] : []),
    new TimeSyncController(opts.time ?? {}),
    ...(opts.time?.clock ? [new AdjtimeStatusController(opts.time.clock)] : []),
    ...(opts.hostDns ? [new HostDNSConfigController(opts.hostDns.listen), new DNSResolveCacheController()] : []),
    new NodeIdentityController(opts.nodeIdentity),
    ...(opts.etcd ? etcdControllers(opts.etcd) : []),
    new ManifestController(),
    new ExtraManifestController(),
    ...(opts.manifestApplyLock ? [new ManifestApplyController(opts.manifestApplyLock)] : []),
    ...controlPlaneControllers(),
    ...kubeletControllers({
      container: opts.kernelParams.container,
      kubePrism: !opts.kernelParams.container,
      ...(opts.kubelet ? { service: opts.kubelet } : {}),
    }),
    ...nodeControllers(),
    new SeccompProfileController(),
    new SeccompProfileFileController({
      directory: opts.seccompProfilesDirectory,
      container: opts.kernelParams.container,
    }),
  ];
}

export { Observed, type Source } from "./runtime/source.js";
