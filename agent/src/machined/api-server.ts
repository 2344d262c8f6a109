// machined's API server on its unix socket: the services apid forwards to, each behind the
// access guard (maintenance mode serves only what Talos's maintenance service does).

import * as grpc from "@grpc/grpc-js";
import { promises as fs } from "node:fs";
import net from "node:net";
import path from "node:path";
import { SystemError } from "../errors.js";
import { callLogInterceptor } from "../grpc/call-log.js";
import { messageSizeOptions } from "../grpc/limits.js";
import { addService, bindServer } from "../grpc/server.js";
import { logger } from "../log.js";
import type { ControllerRuntime } from "../resources/controller-runtime.js";
import type { SystemClock } from "../sys/clock.js";
import { machinedGuard } from "./access.js";
import { inspectServiceImpl, machineServiceImpl, storageServiceImpl, type MachineApiContext } from "./apis.js";
import type { ReplyDeliveries } from "./reply-delivery.js";
import { clusterServiceImpl, type HealthDeps } from "./rpc/health.js";
import { timeServiceImpl } from "./rpc/time.js";

const log = logger("machined");

export interface MachinedApiOptions {
  socket: string;
  context: MachineApiContext;
  /** apid's reports that an apply's reply has left. */
  replies: ReplyDeliveries;
  inMaintenance(): boolean;
  controllers: Pick<ControllerRuntime, "dependencies">;
  /** The clock TimeService reads (absent: the system's). */
  clock: SystemClock | undefined;
  cluster: HealthDeps;
  /** The COSI State handlers. */
  cosi: Record<string, (...args: never[]) => unknown>;
}

/** Builds the server, binds it to `socket` and returns it (listening). */
export async function serveMachinedApi(o: MachinedApiOptions): Promise<grpc.Server> {
  const server = new grpc.Server({ ...messageSizeOptions, interceptors: [callLogInterceptor(log)] });
  const guard = machinedGuard(o.inMaintenance);
  o.replies.register(server);
  const ctx = o.context;
  addService(server, "machine.MachineService", machineServiceImpl(ctx), guard);
  addService(server, "storage.StorageService", storageServiceImpl(ctx), guard);
  addService(
    server,
    "inspect.InspectService",
    inspectServiceImpl({ controllerDependencies: () => o.controllers.dependencies() }),
    guard,
  );
  addService(
    server,
    "time.TimeService",
    timeServiceImpl({ activeConfig: ctx.activeConfig, clock: o.clock ?? { now: () => Date.now() } }),
    guard,
  );
  addService(server, "cluster.ClusterService", clusterServiceImpl(o.cluster), guard);
  addService(server, "securityapi.SecurityService", {}, guard);
  // The COSI handlers are typed by their own messages, which the generic ServiceImpl cannot name.
  addService(server, "cosi.resource.State", o.cosi as never, guard);
  await fs.mkdir(path.dirname(o.socket), { recursive: true, mode: 0o771 });
  await fs.rm(o.socket, { force: true });
  await bindServer(server, `unix:${o.socket}`, grpc.ServerCredentials.createInsecure());
  return server;
}

/** machined's health: its API socket accepts a connection (as Talos checks machined). */
export function unixProbe(socket: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const conn = net.connect(socket);
    conn.once("connect", () => {
      conn.destroy();
      resolve();
    });
    conn.once("error", (err) =>
      reject(new SystemError(`machined's socket ${socket} does not answer`, { socket }, { cause: err })),
    );
  });
}
