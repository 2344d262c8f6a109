import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  CONFIG_NAMESPACE,
  MachineTypeId,
  MachineTypeType,
  type MachineTypeName,
} from "../../resources/catalog/config.js";
import {
  NETWORK_NAMESPACE,
  NetworkStatusId,
  NetworkStatusType,
  type NetworkStatusSpec,
} from "../../resources/catalog/network.js";
import {
  MachineStatusId,
  MachineStatusType,
  RUNTIME_NAMESPACE,
  ServiceType,
  TimeStatusType,
  type MachineStage,
  type MachineStatusSpec,
  type ServiceSpec,
  type TimeStatusSpec,
} from "../../resources/catalog/runtime.js";
import {
  K8S_NAMESPACE,
  StaticPodStatusType,
  type StaticPodStatusSpec,
} from "../../resources/catalog/k8s-controlplane.js";
import type { Source } from "./source.js";

type Condition = MachineStatusSpec["status"]["unmetConditions"][number];
type Check = (ctx: ControllerContext, required: string[]) => string | undefined;

/** The services a node of this type runs and needs up (apid, machined; trustd on a control plane that runs it). */
export type RequiredServices = (machineType: MachineTypeName | undefined) => string[];

/**
 * MachineStatus `machine`: the stage the sequencer reports, ready when every readiness check of
 * that stage passes (Talos checks only in booting and running), each failing check an unmet condition
 * with Talos's name and reason. Only what this node has is judged: time once a time sync publishes
 * TimeStatus, services among those it runs, and the static pods the kubelet reports.
 */
export class MachineStatusController implements Controller {
  readonly name = "runtime.MachineStatusController";
  readonly inputs = [
    { namespace: RUNTIME_NAMESPACE, type: TimeStatusType, id: "node", kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: NetworkStatusType, id: NetworkStatusId, kind: "weak" as const },
    { namespace: RUNTIME_NAMESPACE, type: ServiceType, kind: "weak" as const },
    { namespace: CONFIG_NAMESPACE, type: MachineTypeType, id: MachineTypeId, kind: "weak" as const },
    { namespace: K8S_NAMESPACE, type: StaticPodStatusType, kind: "weak" as const },
  ];
  readonly outputs = [{ type: MachineStatusType }];

  constructor(
    private readonly stage: Source<MachineStage>,
    private readonly requiredServices: RequiredServices,
  ) {}

  watchSources(trigger: () => void, signal: AbortSignal): void {
    this.stage.subscribe(trigger, signal);
  }

  async reconcile(ctx: ControllerContext): Promise<void> {
    const stage = this.stage.get();
    const machineType = ctx.get<MachineTypeName>(CONFIG_NAMESPACE, MachineTypeType, MachineTypeId)?.spec;
    const unmetConditions: Condition[] = [];
    for (const [name, check] of readinessChecks(stage)) {
      const reason = check(ctx, this.requiredServices(machineType));
      if (reason !== undefined) unmetConditions.push({ name, reason });
    }
    const spec: MachineStatusSpec = { stage, status: { ready: unmetConditions.length === 0, unmetConditions } };
    ctx.modify<MachineStatusSpec>(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId, () => spec);
  }
}

function readinessChecks(stage: MachineStage): [string, Check][] {
  if (stage !== "booting" && stage !== "running") return [];
  return [
    ["time", timeSynced],
    ["network", networkReady],
    ["services", servicesUp],
    ["staticPods", staticPodsReady],
  ];
}

const timeSynced: Check = (ctx) => {
  const time = ctx.get<TimeStatusSpec>(RUNTIME_NAMESPACE, TimeStatusType, "node");
  // Before time.SyncController first publishes it: not judged rather than claimed unsynced.
  if (!time) return undefined;
  return time.spec.synced ? undefined : "time is not synced";
};

const networkReady: Check = (ctx) => {
  const status = ctx.get<NetworkStatusSpec>(NETWORK_NAMESPACE, NetworkStatusType, NetworkStatusId);
  if (!status) return `resource ${NetworkStatusType}(${NETWORK_NAMESPACE}/${NetworkStatusId}) doesn't exist`;
  const s = status.spec;
  const notReady = [
    !s.addressReady && "address",
    !s.connectivityReady && "connectivity",
    !s.etcFilesReady && "etc-files",
    !s.hostnameReady && "hostname",
  ].filter((x): x is string => x !== false);
  return notReady.length === 0 ? undefined : `waiting on: ${notReady.join(", ")}`;
};

const servicesUp: Check = (ctx, required) => {
  const problems: string[] = [];
  const running = new Set<string>();
  for (const svc of ctx.list<ServiceSpec>(RUNTIME_NAMESPACE, ServiceType)) {
    const id = svc.metadata.id;
    if (!svc.spec.running) {
      problems.push(`${id} not running`);
      continue;
    }
    running.add(id);
    if (!svc.spec.unknown && !svc.spec.healthy) problems.push(`${id} not healthy`);
  }
  for (const id of required) if (!running.has(id)) problems.push(`${id} not running`);
  return problems.length === 0 ? undefined : problems.join(", ");
};

interface PodStatus {
  phase?: string;
  conditions?: { type?: string; status?: string }[];
}

/** No static pod the kubelet reports is pending, failed, unknown, or running and not ready. */
const staticPodsReady: Check = (ctx) => {
  const problems: string[] = [];
  for (const pod of ctx.list<StaticPodStatusSpec>(K8S_NAMESPACE, StaticPodStatusType)) {
    // The kubelet's v1 PodStatus as it sent it; fields are only compared, so a missing one is harmless.
    const status = pod.spec.podStatus as PodStatus;
    const id = pod.metadata.id;
    if (status.phase === "Pending" || status.phase === "Failed" || status.phase === "Unknown") {
      problems.push(`${id} ${status.phase.toLowerCase()}`);
      continue;
    }
    if (status.phase !== "Running") continue;
    const ready = status.conditions?.find((c) => c.type === "Ready")?.status === "True";
    if (!ready) problems.push(`${id} not ready`);
  }
  return problems.length === 0 ? undefined : problems.join(", ");
};
