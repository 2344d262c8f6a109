// machined's one registration list: every controller of the node, each declaring its
// inputs and the single type it writes (Talos's v1alpha2_controller.go list).

import type { ConfigBundle } from "../config/bundle.js";
import type { Controller } from "../resources/controller-runtime.js";
import type { MachineStage, PlatformMetadataSpec } from "../resources/catalog/runtime.js";
import type { MountedVolume } from "../storage/volumes.js";
import { MachineConfigController } from "./config/machine-config.js";
import { MachineTypeController } from "./config/machine-type.js";
import { MachineStatusController, type RequiredServices } from "./runtime/machine-status.js";
import { MetaKeysController } from "./runtime/meta-keys.js";
import { MountStatusController } from "./runtime/mount-status.js";
import { PlatformMetadataController } from "./runtime/platform-metadata.js";
import { PlatformHostnameController, PlatformResolversController, type PlatformNetwork } from "./runtime/platform-network.js";
import { ServiceController, type ServiceStatuses } from "./runtime/service.js";
import type { Source } from "./runtime/source.js";
import { secretsControllers, type SecretsOptions } from "./secrets/index.js";

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
}

export function machinedControllers(opts: ControllersOptions): Controller[] {
  const s = opts.sources;
  return [
    ...opts.network,
    new MachineConfigController(s.activeConfig),
    new MachineTypeController(),
    new MachineStatusController(s.stage, s.requiredServices),
    new ServiceController(s.services),
    new MountStatusController(s.volumes),
    new MetaKeysController(s.metaKeys),
    new PlatformMetadataController(s.platformMetadata),
    new PlatformHostnameController(s.platformNetwork),
    new PlatformResolversController(s.platformNetwork),
    ...secretsControllers(opts.secrets),
  ];
}

export { Observed, type Source } from "./runtime/source.js";
