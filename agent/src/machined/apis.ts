import type * as grpc from "@grpc/grpc-js";
import { randomUUID } from "node:crypto";
import { MachineTypeEnum } from "../config/generate/machine-type-enum.js";
import type { GenerateConfigurationRequestLike } from "../config/generate/request.js";
import { unaryHandler, type ServiceImpl } from "../grpc/server.js";
import { listDisks, type DiskInfo } from "../storage/disks.js";
import type { BlockSysfs } from "../sys/block.js";
import type { Supervisor } from "../services/supervisor.js";
import { serviceListResponse } from "./service-list.js";
import { versionMessage } from "./version.js";
import { InvalidInputError, NotFoundError } from "../errors.js";
import type { MetaStore } from "../storage/meta.js";
import type { ApplyRequest } from "./apply/index.js";
import type { EventBus } from "./events.js";
import type { ConfigBundle } from "../config/bundle.js";
import { streamDmesg, type DmesgRequest } from "./rpc/dmesg.js";
import { imagePullResponse, streamImageList } from "./rpc/images.js";
import {
  containersResponse,
  restartResponse,
  statsResponse,
  type ContainerdClients,
  type CriAccess,
} from "./rpc/containers.js";
import { streamEvents, type EventsRequest } from "./rpc/events.js";
import { logsContainers, streamLogs, type LogsRequest } from "./rpc/logs.js";
import { generateClientConfiguration } from "./rpc/generate-client-config.js";
import { streamList, type ListRequest } from "./rpc/list.js";
import { mountStats } from "./rpc/mounts.js";
import { streamFile, type ReadRequest } from "./rpc/read.js";
import type { RebootOptions, ResetMode, ResetOptions } from "./sequences.js";
import type { Platform } from "./platform.js";
import { streamCopy, type CopyRequest } from "./rpc/copy.js";
import { kubeconfigHandler } from "./rpc/kubeconfig.js";
import { send } from "./rpc/stream.js";
import { streamDiskUsage, type DiskUsageRequest } from "./rpc/disk-usage.js";
import { cpuInfo, diskStats, hostname, loadAvg, memory, networkDeviceStats, systemStat } from "./rpc/monitoring.js";
import { netstat, type NetstatRequest } from "./rpc/netstat.js";
import { processes } from "./rpc/processes.js";
import { dependencyEdgeTypeNumbers, type DependencyEdge } from "../resources/controller-runtime.js";
import { etcdServiceImpl, type EtcdApiContext } from "./rpc/etcd.js";
import { packetCaptureImpl, type PacketCaptureDeps } from "./rpc/packet-capture.js";

/** What the API handlers need from the running machine. */
export interface MachineApiContext {
  platform: Platform;
  supervisor: Supervisor;
  block: BlockSysfs;
  inMaintenance(): boolean;
  rbacEnabled(): boolean;
  /** The active configuration (normal mode). */
  activeConfig(): ConfigBundle | undefined;
  /** Returns one machine.ApplyConfiguration message. */
  applyConfiguration(
    req: ApplyRequest,
    call: grpc.ServerUnaryCall<ApplyRequest, unknown>,
  ): Promise<Record<string, unknown>>;
  /** The disk the system is installed on (e.g. /dev/vda). */
  systemDisk(): string | undefined;
  /** Start the lifecycle sequences once the reply has left; throw when another sequence may not be taken over. */
  reboot(opts: RebootOptions, actorId: string): void;
  shutdown(actorId: string): void;
  reset(opts: ResetOptions, actorId: string): void;
  /** Pulls the installer (the reply waits for it, as Talos validates the image first), then starts the upgrade. */
  upgrade(req: UpgradeRequest, actorId: string): Promise<void>;
  /** Makes the other BOOT slot the default, then reboots. */
  rollback(actorId: string): Promise<void>;
  events: EventBus;
  /** Clients of the system containerd, by namespace (absent: no containerd runs). */
  containerd: ContainerdClients;
  /** The CRI containerd (absent: this node runs none). */
  cri?: CriAccess;
  /** The open META store (throws when there is none) and how to republish its keys. */
  meta(): { store: MetaStore; published(): void };
  /** Bootstrap and the Etcd* calls (absent: they answer Unimplemented). */
  etcd?: EtcdApiContext;
  /** PacketCapture's links and packets (absent: it answers Unimplemented). */
  packetCapture?: PacketCaptureDeps;
}

interface ResetRequest {
  graceful?: boolean;
  reboot?: boolean;
  system_partitions_to_wipe?: { label?: string; wipe?: boolean }[];
  user_disks_to_wipe?: string[];
  mode?: number;
}

/** machine.UpgradeRequest */
export interface UpgradeRequest {
  image?: string;
  preserve?: boolean;
  stage?: boolean;
  force?: boolean;
  /** DEFAULT 0, POWERCYCLE 1 */
  reboot_mode?: number;
}

const wipeable = new Set(["STATE", "EPHEMERAL", "META"]);

/** ResetRequest.WipeMode numbers. */
const resetModes: Record<number, ResetMode> = { 0: "all", 1: "systemDisk", 2: "userDisks" };
/** RebootRequest.Mode.POWERCYCLE */
const powercycle = 1;

/** A Reset request checked as Talos checks it, before anything stops. */
export function resetOptions(
  req: ResetRequest,
  disks: readonly Pick<DiskInfo, "device_name" | "readonly">[],
  systemDisk: string | undefined,
): ResetOptions {
  const mode = resetModes[req.mode ?? 0];
  if (!mode) throw new InvalidInputError(`unknown reset mode ${req.mode}`, { mode: req.mode });
  const userDisks = req.user_disks_to_wipe ?? [];
  if (userDisks.length > 0 && mode === "systemDisk")
    throw new InvalidInputError(
      "reset failed: invalid input, wipe mode SYSTEM_DISK doesn't support UserDisksToWipe parameter",
    );
  for (const name of userDisks) {
    const disk = disks.find((d) => d.device_name === name);
    if (!disk) throw new NotFoundError(`reset user disk failed: device ${name} wasn't found`, { device: name });
    if (disk.readonly)
      throw new InvalidInputError(`reset user disk failed: device ${name} is readonly`, { device: name });
    if (name === systemDisk)
      throw new InvalidInputError(`reset user disk failed: device ${name} is the system disk`, { device: name });
  }
  const specs = req.system_partitions_to_wipe ?? [];
  if (specs.length > 0 && mode === "userDisks")
    throw new InvalidInputError(
      "reset failed: invalid input, wipe mode USER_DISKS doesn't support SystemPartitionsToWipe parameter",
    );
  const labels = specs.filter((p) => p.wipe !== false).map((p) => p.label ?? "");
  for (const l of labels)
    if (!wipeable.has(l))
      throw new InvalidInputError(
        `system partition ${JSON.stringify(l)} can't be wiped: only STATE, EPHEMERAL and META`,
        { label: l },
      );
  return { labels, reboot: req.reboot === true, mode, userDisks, graceful: req.graceful === true };
}

/** MachineService handlers; methods not listed answer Unimplemented (grpc/server.ts). */
export function machineServiceImpl(ctx: MachineApiContext): ServiceImpl {
  return {
    Version: unaryHandler(async () => ({
      messages: [versionMessage(ctx.platform, { maintenance: ctx.inMaintenance(), rbac: ctx.rbacEnabled() })],
    })),
    ServiceList: unaryHandler(async () => serviceListResponse(ctx.supervisor.list())),
    ServiceStart: unaryHandler(async (req: { id?: string }) => {
      ctx.supervisor.apiStart(req.id ?? "");
      return { messages: [{ resp: `Service ${JSON.stringify(req.id ?? "")} started` }] };
    }),
    ServiceStop: unaryHandler(async (req: { id?: string }) => {
      await ctx.supervisor.apiStop(req.id ?? "");
      return { messages: [{ resp: `Service ${JSON.stringify(req.id ?? "")} stopped` }] };
    }),
    ServiceRestart: unaryHandler(async (req: { id?: string }) => {
      await ctx.supervisor.apiRestart(req.id ?? "");
      return { messages: [{ resp: `Service ${JSON.stringify(req.id ?? "")} restarted` }] };
    }),
    Logs: async (call: grpc.ServerWritableStream<LogsRequest, unknown>) =>
      streamLogs(ctx.supervisor.logs, ctx.cri, call),
    LogsContainers: unaryHandler(async () => logsContainers(ctx.supervisor.logs)),
    Reboot: unaryHandler(async (req: { mode?: number }) => {
      const actorId = randomUUID();
      ctx.reboot({ powercycle: req.mode === powercycle }, actorId);
      return { messages: [{ actor_id: actorId }] };
    }),
    Shutdown: unaryHandler(async () => {
      const actorId = randomUUID();
      ctx.shutdown(actorId);
      return { messages: [{ actor_id: actorId }] };
    }),
    Reset: unaryHandler(async (req: ResetRequest) => {
      const opts = resetOptions(req, listDisks(ctx.block), ctx.systemDisk());
      const actorId = randomUUID();
      ctx.reset(opts, actorId);
      return { messages: [{ actor_id: actorId }] };
    }),
    Upgrade: unaryHandler(async (req: UpgradeRequest) => {
      const actorId = randomUUID();
      await ctx.upgrade(req, actorId);
      return { messages: [{ ack: "Upgrade request received", actor_id: actorId }] };
    }),
    Rollback: unaryHandler(async () => {
      await ctx.rollback(randomUUID());
      return { messages: [{}] };
    }),
    Read: async (call: grpc.ServerWritableStream<ReadRequest, unknown>) => streamFile(call),
    List: async (call: grpc.ServerWritableStream<ListRequest, unknown>) => streamList(call),
    Mounts: unaryHandler(async () => mountStats()),
    Containers: unaryHandler((req: { namespace?: string; driver?: number }) =>
      containersResponse(ctx.containerd, ctx.cri, req),
    ),
    Stats: unaryHandler((req: { namespace?: string; driver?: number }) => statsResponse(ctx.containerd, ctx.cri, req)),
    Restart: unaryHandler((req: { namespace?: string; driver?: number; id?: string }) =>
      restartResponse(ctx.containerd, ctx.cri, req),
    ),
    ImageList: async (call: grpc.ServerWritableStream<{ namespace?: number }, unknown>) =>
      streamImageList(ctx.containerd, ctx.cri, call),
    ImagePull: unaryHandler((req: { namespace?: number; reference?: string }) =>
      imagePullResponse(ctx.containerd, ctx.cri, () => ctx.activeConfig()?.v1alpha1()?.machine?.registries, req),
    ),
    Events: async (call: grpc.ServerWritableStream<EventsRequest, unknown>) => streamEvents(ctx.events, call),
    Dmesg: async (call: grpc.ServerWritableStream<DmesgRequest, unknown>) => streamDmesg(call),
    Memory: unaryHandler(() => memory()),
    CPUInfo: unaryHandler(() => cpuInfo()),
    LoadAvg: unaryHandler(() => loadAvg()),
    SystemStat: unaryHandler(() => systemStat()),
    NetworkDeviceStats: unaryHandler(() => networkDeviceStats()),
    DiskStats: unaryHandler(() => diskStats()),
    Hostname: unaryHandler(() => hostname()),
    Processes: unaryHandler(() => processes()),
    Netstat: unaryHandler((req: NetstatRequest) => netstat(req)),
    DiskUsage: async (call: grpc.ServerWritableStream<DiskUsageRequest, unknown>) => streamDiskUsage(call),
    Copy: async (call: grpc.ServerWritableStream<CopyRequest, unknown>) => streamCopy(call),
    ...packetCaptureImpl(ctx.packetCapture),
    GenerateClientConfiguration: unaryHandler(generateClientConfiguration(ctx)),
    Kubeconfig: async (call: grpc.ServerWritableStream<unknown, unknown>) => {
      const message = await kubeconfigHandler(ctx)();
      if (await send(call, message)) call.end();
    },
    MetaWrite: unaryHandler(async (req: { key?: number; value?: Buffer }) => {
      const meta = ctx.meta();
      await meta.store.set(req.key ?? 0, Buffer.from(req.value ?? Buffer.alloc(0)).toString("utf8"));
      meta.published();
      return { messages: [{}] };
    }),
    MetaDelete: unaryHandler(async (req: { key?: number }) => {
      const meta = ctx.meta();
      if (!(await meta.store.delete(req.key ?? 0)))
        throw new NotFoundError(`META key 0x${(req.key ?? 0).toString(16)} not found`, { key: req.key });
      meta.published();
      return { messages: [{}] };
    }),
    ApplyConfiguration: unaryHandler(async (req: ApplyRequest, call) => ({
      messages: [await ctx.applyConfiguration(req, call as grpc.ServerUnaryCall<ApplyRequest, unknown>)],
    })),
    GenerateConfiguration: unaryHandler(async (req: GenerateConfigurationRequestLike) => {
      if (ctx.inMaintenance() && req.machine_config?.type === MachineTypeEnum.TYPE_WORKER) {
        // A plain error on Talos (gRPC Unknown), not a status.
        throw new Error("join config can't be generated in the maintenance mode");
      }
      // Normal mode: configs joining this node's cluster (its own secrets); maintenance: a new cluster.
      const active = ctx.inMaintenance() ? undefined : ctx.activeConfig();
      // Config generation (and @peculiar/x509 with it) loads on the first call, not on every machined start.
      const { generateMachineConfig, secretsBundleFromConfig } = await import("../config/generate/index.js");
      const out = await generateMachineConfig(req, active ? { secrets: secretsBundleFromConfig(active.toYaml()) } : {});
      return { messages: [{ data: out.data.map((d) => Buffer.from(d)), talosconfig: Buffer.from(out.talosconfig) }] };
    }),
    ...(ctx.etcd ? etcdServiceImpl(ctx.etcd) : {}),
  };
}

/** StorageService handlers. */
export function storageServiceImpl(ctx: Pick<MachineApiContext, "block" | "systemDisk">): ServiceImpl {
  return {
    Disks: unaryHandler(async () => {
      const system = ctx.systemDisk()?.replace(/^\/dev\//, "");
      return { messages: [{ disks: listDisks(ctx.block, system ? { systemDisk: system } : {}) }] };
    }),
  };
}

/** InspectService: machined's controller graph, from the inputs and outputs each controller declares. */
export function inspectServiceImpl(ctx: { controllerDependencies(): DependencyEdge[] }): ServiceImpl {
  return {
    ControllerRuntimeDependencies: unaryHandler(async () => ({
      messages: [
        {
          edges: ctx.controllerDependencies().map((e) => ({
            controller_name: e.controllerName,
            edge_type: dependencyEdgeTypeNumbers[e.edgeType],
            resource_namespace: e.namespace,
            resource_type: e.type,
            resource_id: e.id ?? "",
          })),
        },
      ],
    })),
  };
}
