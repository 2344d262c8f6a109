// The summary a node shows on its console (tty2), as Talos's dashboard summary screen: the node
// and version, Talos's machine fields (UUID, cluster, stage, ready, type, STATE/EPHEMERAL) and
// network fields (host, addresses, gateways, connectivity, DNS, NTP), with Talos's "n/a" and
// "<none>". In maintenance it also says how to apply a configuration. Plain text: the VT has no
// colour markup to interpret.

import { InfoType, type InfoSpec } from "../resources/catalog/cluster.js";
import { CONFIG_NAMESPACE, MachineTypeId, MachineTypeType, type MachineTypeSpec } from "../resources/catalog/config.js";
import {
  HARDWARE_NAMESPACE,
  SystemInformationId,
  SystemInformationType,
  type SystemInformationSpec,
} from "../resources/catalog/hardware.js";
import {
  HostnameStatusId,
  HostnameStatusType,
  NETWORK_NAMESPACE,
  NetworkStatusId,
  NetworkStatusType,
  NodeAddressIds,
  NodeAddressType,
  ResolverStatusId,
  ResolverStatusType,
  RouteStatusType,
  TimeServerStatusId,
  TimeServerStatusType,
  filteredNodeAddressId,
  type HostnameStatusSpec,
  type NetworkStatusSpec,
  type NodeAddressSpec,
  type ResolverStatusSpec,
  type RouteStatusSpec,
  type TimeServerStatusSpec,
} from "../resources/catalog/network.js";
import {
  MachineStatusId,
  MachineStatusType,
  MountStatusType,
  RUNTIME_NAMESPACE,
  type MachineStatusSpec,
  type MountStatusSpec,
} from "../resources/catalog/runtime.js";
import type { ResourceState } from "../resources/state.js";
import { installFailureLines } from "./install-failure.js";

const notAvailable = "n/a";
const none = "<none>";

/** The kinds the summary reads: a change to any of them redraws it. */
export const summaryInputs: readonly { namespace: string; type: string }[] = [
  { namespace: RUNTIME_NAMESPACE, type: MachineStatusType },
  { namespace: RUNTIME_NAMESPACE, type: MountStatusType },
  { namespace: CONFIG_NAMESPACE, type: MachineTypeType },
  { namespace: "cluster", type: InfoType },
  { namespace: HARDWARE_NAMESPACE, type: SystemInformationType },
  { namespace: NETWORK_NAMESPACE, type: HostnameStatusType },
  { namespace: NETWORK_NAMESPACE, type: NodeAddressType },
  { namespace: NETWORK_NAMESPACE, type: RouteStatusType },
  { namespace: NETWORK_NAMESPACE, type: NetworkStatusType },
  { namespace: NETWORK_NAMESPACE, type: ResolverStatusType },
  { namespace: NETWORK_NAMESPACE, type: TimeServerStatusType },
];

/** "running" → "Running", as Talos's capitalizeFirst. */
function capitalizeFirst(s: string): string {
  return s === "" ? s : s[0]!.toUpperCase() + s.slice(1).toLowerCase();
}

function fieldGroup(fields: [string, string][]): string[] {
  const width = Math.max(...fields.map(([name]) => name.length));
  return fields.map(([name, value]) => `${name.padEnd(width)}  ${value}`);
}

function mountStatus(s: MountStatusSpec | undefined): string {
  if (!s) return notAvailable;
  return s.encrypted ? `OK - encrypted (${(s.encryptionProviders ?? []).join(",")})` : "OK";
}

/** Talos prefers routed-no-k8s, then routed; sorted, comma-separated. */
function addresses(state: ResourceState): string {
  const spec =
    state.get<NodeAddressSpec>(
      NETWORK_NAMESPACE,
      NodeAddressType,
      filteredNodeAddressId(NodeAddressIds.routed, "no-k8s"),
    )?.spec ?? state.get<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, NodeAddressIds.routed)?.spec;
  return spec ? [...spec.addresses].sort().join(", ") : notAvailable;
}

/** The gateways of default routes, IPv4 first, each family sorted. */
function gateways(state: ResourceState): string {
  const defaults = state
    .list<RouteStatusSpec>(NETWORK_NAMESPACE, RouteStatusType)
    .filter((r) => r.spec.dst === "" && r.spec.gateway !== "");
  const v4 = defaults
    .filter((r) => !r.spec.gateway.includes(":"))
    .map((r) => r.spec.gateway)
    .sort();
  const v6 = defaults
    .filter((r) => r.spec.gateway.includes(":"))
    .map((r) => r.spec.gateway)
    .sort();
  return v4.length + v6.length === 0 ? notAvailable : [...v4, ...v6].join(", ");
}

function listOr(values: string[] | undefined): string {
  if (values === undefined) return notAvailable;
  return values.length === 0 ? none : values.join(", ");
}

/** The summary's text for the resources in `state` now; `version` is the running version's tag. */
export function renderConsoleSummary(
  state: ResourceState,
  opts: { version: string; apiPort: number; installFailure?: string | undefined },
): string {
  const get = <S>(namespace: string, type: string, id: string) => state.get<S>(namespace, type, id)?.spec;
  const machine = get<MachineStatusSpec>(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId);
  const hostname =
    get<HostnameStatusSpec>(NETWORK_NAMESPACE, HostnameStatusType, HostnameStatusId)?.hostname ?? notAvailable;
  const clusterName = state.list<InfoSpec>("cluster", InfoType)[0]?.spec.clusterName;
  const type = get<MachineTypeSpec>(CONFIG_NAMESPACE, MachineTypeType, MachineTypeId);
  const network = get<NetworkStatusSpec>(NETWORK_NAMESPACE, NetworkStatusType, NetworkStatusId);
  const ips = addresses(state);

  const lines = [
    `${hostname} (${opts.version})`,
    "",
    ...fieldGroup([
      [
        "UUID",
        get<SystemInformationSpec>(HARDWARE_NAMESPACE, SystemInformationType, SystemInformationId)?.uuid ??
          notAvailable,
      ],
      ["CLUSTER", clusterName ? clusterName : notAvailable],
      ["STAGE", machine ? capitalizeFirst(machine.stage) : notAvailable],
      ["READY", machine ? capitalizeFirst(String(machine.status.ready)) : notAvailable],
      ["TYPE", type ?? notAvailable],
      ["STATE", mountStatus(get<MountStatusSpec>(RUNTIME_NAMESPACE, MountStatusType, "STATE"))],
      ["EPHEMERAL", mountStatus(get<MountStatusSpec>(RUNTIME_NAMESPACE, MountStatusType, "EPHEMERAL"))],
    ]),
    "",
    ...fieldGroup([
      ["HOST", hostname],
      ["IP", ips],
      ["GW", gateways(state)],
      ["CONNECTIVITY", network ? (network.connectivityReady ? "OK" : "FAILED") : notAvailable],
      ["DNS", listOr(get<ResolverStatusSpec>(NETWORK_NAMESPACE, ResolverStatusType, ResolverStatusId)?.dnsServers)],
      [
        "NTP",
        listOr(get<TimeServerStatusSpec>(NETWORK_NAMESPACE, TimeServerStatusType, TimeServerStatusId)?.timeServers),
      ],
    ]),
  ];
  if (machine?.stage === "maintenance") {
    const first = ips === notAvailable ? "<node-ip>" : ips.split(", ")[0]!.replace(/\/\d+$/, "");
    const node = opts.apiPort === 50000 ? first : `${first.includes(":") ? `[${first}]` : first}:${opts.apiPort}`;
    if (opts.installFailure !== undefined) lines.push("", ...installFailureLines(opts.installFailure));
    lines.push(
      "",
      "waiting for configuration; upload it using talosctl:",
      `  talosctl apply-config --insecure --nodes ${node} --file <config.yaml>`,
    );
  }
  if (machine && machine.status.unmetConditions.length > 0) {
    lines.push("", "unmet conditions:", ...machine.status.unmetConditions.map((c) => `  ${c.name}: ${c.reason}`));
  }
  return lines.join("\n") + "\n";
}
