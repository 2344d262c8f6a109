// GenerateConfiguration (MachineService): a machine.GenerateConfigurationRequest,
// as the proto loader decodes it (snake_case keys, enums as numbers), turned into
// one machine config document and a talosconfig, reusing the node's secrets when
// it has them.
import { InvalidInputError } from "../../errors.js";
import {
  checkClusterOptions,
  machineConfigYaml,
  type ClusterOptions,
  type MachineOptions,
  type MachineType,
} from "./machine-config.js";
import { generateSecretsBundle, type SecretsBundle } from "./secrets.js";
import { generateTalosconfig } from "./talosconfig.js";
import { MachineTypeEnum } from "./machine-type-enum.js";

export { MachineTypeEnum };

export interface GenerateConfigurationRequestLike {
  config_version?: string;
  cluster_config?: {
    name?: string;
    control_plane?: { endpoint?: string } | null;
    cluster_network?: { dns_domain?: string; cni_config?: { name?: string; urls?: string[] } | null } | null;
    allow_scheduling_on_control_planes?: boolean;
  } | null;
  machine_config?: {
    type?: number;
    install_config?: { install_disk?: string; install_image?: string } | null;
    network_config?: {
      hostname?: string;
      interfaces?: {
        interface?: string;
        cidr?: string;
        mtu?: number;
        dhcp?: boolean;
        ignore?: boolean;
        dhcp_options?: { route_metric?: number } | null;
        routes?: { network?: string; gateway?: string; metric?: number }[];
      }[];
    } | null;
    kubernetes_version?: string;
  } | null;
  /** google.protobuf.Timestamp as decoded, or a Date. */
  override_time?: { seconds?: number; nanos?: number } | Date | null;
}

export interface GeneratedMachineConfig {
  /** The `data` field: one machine configuration document. */
  data: string[];
  talosconfig: string;
  type: MachineType;
}

function machineTypeOf(value: number | undefined): MachineType {
  switch (value) {
    case MachineTypeEnum.TYPE_INIT:
      return "init";
    case MachineTypeEnum.TYPE_CONTROL_PLANE:
      return "controlplane";
    case MachineTypeEnum.TYPE_WORKER:
      return "worker";
    default:
      throw new InvalidInputError(`unsupported machine type ${value ?? 0}`);
  }
}

function timeOf(value: GenerateConfigurationRequestLike["override_time"]): Date | undefined {
  if (!value) return undefined;
  if (value instanceof Date) return value;
  if (!value.seconds && !value.nanos) return undefined;
  return new Date((value.seconds ?? 0) * 1000 + Math.floor((value.nanos ?? 0) / 1e6));
}

/**
 * Generates the configuration a GenerateConfiguration request asks for. `secrets`
 * are the node's own (from its current config); without them a new bundle is made.
 */
export async function generateMachineConfig(
  request: GenerateConfigurationRequestLike,
  options: { secrets?: SecretsBundle } = {},
): Promise<GeneratedMachineConfig> {
  const version = request.config_version || "v1alpha1";
  if (version !== "v1alpha1") throw new InvalidInputError(`unsupported config version ${JSON.stringify(version)}`);
  const cluster = request.cluster_config ?? {};
  const machine = request.machine_config ?? {};
  const type = machineTypeOf(machine.type);
  const now = timeOf(request.override_time);
  const install = machine.install_config ?? {};
  const cni = cluster.cluster_network?.cni_config;
  const clusterOptions: ClusterOptions = {
    clusterName: cluster.name ?? "",
    endpoint: cluster.control_plane?.endpoint ?? "",
    ...(machine.kubernetes_version ? { kubernetesVersion: machine.kubernetes_version } : {}),
    ...(install.install_disk ? { installDisk: install.install_disk } : {}),
    ...(install.install_image ? { installImage: install.install_image } : {}),
    ...(cluster.cluster_network?.dns_domain ? { dnsDomain: cluster.cluster_network.dns_domain } : {}),
    ...(cni?.name ? { cni: { name: cni.name, urls: cni.urls ?? [] } } : {}),
    ...(cluster.allow_scheduling_on_control_planes ? { allowSchedulingOnControlPlanes: true } : {}),
  };
  const network = machine.network_config ?? {};
  const machineOptions: MachineOptions = {
    ...(network.hostname ? { hostname: network.hostname } : {}),
    interfaces: (network.interfaces ?? []).map((i) => ({
      interface: i.interface ?? "",
      ...(i.cidr ? { addresses: [i.cidr] } : {}),
      ...(i.mtu ? { mtu: i.mtu } : {}),
      ...(i.dhcp ? { dhcp: true } : {}),
      ...(i.ignore ? { ignore: true } : {}),
      ...(i.dhcp_options?.route_metric ? { dhcpOptions: { routeMetric: i.dhcp_options.route_metric } } : {}),
      routes: (i.routes ?? []).map((r) => ({
        network: r.network ?? "",
        ...(r.gateway ? { gateway: r.gateway } : {}),
        ...(r.metric ? { metric: r.metric } : {}),
      })),
    })),
  };
  // Check the inputs before generating keys.
  checkClusterOptions(clusterOptions);
  const secrets = options.secrets ?? (await generateSecretsBundle(now));
  const document = machineConfigYaml(type, clusterOptions, secrets, machineOptions);
  const talosconfig = await generateTalosconfig(secrets, {
    contextName: clusterOptions.clusterName,
    ...(now ? { now } : {}),
  });
  return { data: [document], talosconfig, type };
}
