import type * as grpc from "@grpc/grpc-js";
import { generateMachineConfig, MachineTypeEnum, secretsBundleFromConfig, type GenerateConfigurationRequestLike } from "../config/generate/index.js";
import { unaryHandler, type ServiceImpl } from "../grpc/server.js";
import { listDisks } from "../storage/disks.js";
import type { BlockSysfs } from "../sys/block.js";
import type { Supervisor } from "../services/supervisor.js";
import { serviceListResponse } from "./service-list.js";
import { versionMessage } from "./version.js";
import type { ApplyRequest } from "./apply.js";
import type { Platform } from "./platform.js";

/** What the API handlers need from the running machine. */
export interface MachineApiContext {
  platform: Platform;
  supervisor: Supervisor;
  block: BlockSysfs;
  inMaintenance(): boolean;
  rbacEnabled(): boolean;
  /** The active configuration text (normal mode). */
  activeConfig(): string | undefined;
  /** Returns one machine.ApplyConfiguration message. */
  applyConfiguration(req: ApplyRequest, call: grpc.ServerUnaryCall<ApplyRequest, unknown>): Promise<Record<string, unknown>>;
}

/** MachineService handlers; methods not listed answer Unimplemented (grpc/server.ts). */
export function machineServiceImpl(ctx: MachineApiContext): ServiceImpl {
  return {
    Version: unaryHandler(async () => ({
      messages: [versionMessage(ctx.platform, { maintenance: ctx.inMaintenance(), rbac: ctx.rbacEnabled() })],
    })),
    ServiceList: unaryHandler(async () => serviceListResponse(ctx.supervisor.list())),
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
      const out = await generateMachineConfig(req, active ? { secrets: secretsBundleFromConfig(active) } : {});
      return { messages: [{ data: out.data.map((d) => Buffer.from(d)), talosconfig: Buffer.from(out.talosconfig) }] };
    }),
  };
}

/** StorageService handlers. */
export function storageServiceImpl(ctx: Pick<MachineApiContext, "block">): ServiceImpl {
  return {
    Disks: unaryHandler(async () => ({ messages: [{ disks: listDisks(ctx.block) }] })),
  };
}
