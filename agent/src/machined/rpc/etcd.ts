// MachineService's etcd calls, as Talos's v1alpha1 server answers them: control-plane only
// (Unimplemented elsewhere), each through a client of the local member or of the control plane's
// members with machined's admin certificate, replies shaped as Talos's (one message each).
import type * as grpc from "@grpc/grpc-js";
import { rm } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { NotFoundError, SystemError, UnimplementedError } from "../../errors.js";
import { unaryHandler, type ServiceImpl } from "../../grpc/server.js";
import type { MachineTypeName } from "../../resources/catalog/config.js";
import {
  ETCD_NAMESPACE,
  EtcdLocalMemberId,
  EtcdMemberType,
  formatMemberId,
  type EtcdMemberSpec,
} from "../../resources/catalog/etcd.js";
import type { ResourceState } from "../../resources/state.js";
import { resourceExists } from "../../services/conditions.js";
import {
  adminTls,
  EtcdClient,
  endpointOf,
  etcdErrors,
  firstAnswering,
  isEtcdError,
  type AlarmMember,
  type EtcdClientOptions,
  type EtcdMemberInfo,
} from "../../sys/etcd/client.js";
import type { EtcdPaths } from "../../sys/etcd/paths.js";
import { cancellation, send } from "./stream.js";
import { bootstrapHandler, recoverHandler, type BootstrapContext } from "./etcd-bootstrap.js";

export interface EtcdApiContext extends BootstrapContext {
  machineType(): MachineTypeName | undefined;
  state: ResourceState;
  paths: EtcdPaths;
  /** The local member's client port (Talos: 2379 on localhost). */
  clientPort: number;
  /** The control plane's etcd endpoints (host:port), Talos's NewClientFromControlPlaneIPs. */
  controlPlaneEndpoints(): Promise<string[]>;
  /** Stops the etcd service (EtcdLeaveCluster). */
  stopEtcd(): Promise<void>;
  /** Retry pacing of EtcdLeaveCluster's member removal (Talos: every 10 s for 5 min). */
  leaveRetry?: { intervalMs: number; totalMs: number };
}

const isControlPlane = (t: MachineTypeName | undefined) => t === "controlplane" || t === "init";

/** Talos's checkControlplane. */
function requireControlPlane(ctx: Pick<EtcdApiContext, "machineType">, api: string): void {
  if (!isControlPlane(ctx.machineType()))
    throw new UnimplementedError(`${api} is only available on control plane nodes`);
}

/** `what: cause`, as Talos wraps the etcd client's errors. */
function failed(what: string, err: unknown): Error {
  return new SystemError(what, {}, { cause: err });
}

async function withLocal<T>(
  ctx: EtcdApiContext,
  opts: EtcdClientOptions,
  fn: (c: EtcdClient) => Promise<T>,
): Promise<T> {
  const client = new EtcdClient(`localhost:${ctx.clientPort}`, await adminTls(ctx.paths.pkiDir), opts);
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

async function withControlPlane<T>(ctx: EtcdApiContext, fn: (c: EtcdClient) => Promise<T>): Promise<T> {
  const endpoints = await ctx.controlPlaneEndpoints();
  // Shuffled as Talos does, so that calls spread over the members.
  const shuffled = [...endpoints].sort(() => Math.random() - 0.5);
  return firstAnswering(shuffled, await adminTls(ctx.paths.pkiDir), { requireLeader: true }, fn);
}

const mapAlarms = (alarms: AlarmMember[]) =>
  alarms.map((a) => ({ member_id: a.memberId.toString(), alarm: a.alarm <= 2 ? a.alarm : 0 }));

/** This node's member ID from EtcdMember `local`, waiting for it up to 3 min as Talos does. */
async function localMemberId(ctx: EtcdApiContext, signal?: AbortSignal): Promise<bigint> {
  const ac = AbortSignal.timeout(3 * 60_000);
  const waitSignal = signal ? AbortSignal.any([signal, ac]) : ac;
  await resourceExists(ctx.state, ETCD_NAMESPACE, EtcdMemberType, EtcdLocalMemberId)
    .wait(waitSignal)
    .catch((err: unknown) => {
      throw new SystemError("failed to get local etcd member ID", {}, { cause: err });
    });
  const spec = ctx.state.get<EtcdMemberSpec>(ETCD_NAMESPACE, EtcdMemberType, EtcdLocalMemberId)!.spec;
  return BigInt(`0x${spec.memberID}`);
}

/**
 * Talos's ForfeitLeadership: when this member leads, leadership moves to the first other member
 * (its name is returned); "" when it does not lead.
 */
export async function forfeitLeadership(
  client: EtcdClient,
  memberId: bigint,
  tls: Awaited<ReturnType<typeof adminTls>>,
): Promise<string> {
  const { members } = await client.memberList();
  if (members.length === 1) throw new SystemError("cannot forfeit leadership, only one member");
  const self = members.find((m) => m.id === memberId);
  if (!self)
    throw new SystemError(`failed to find ${JSON.stringify(formatMemberId(memberId))} in list of etcd members`);
  for (const url of self.clientURLs) {
    const direct = new EtcdClient(endpointOf(url), tls);
    try {
      const status = await direct.status();
      if (status.leader !== self.id) return "";
      const other = members.find((m) => m.id !== self.id);
      if (!other) return "";
      try {
        await direct.moveLeader(other.id);
      } catch (err) {
        if (isEtcdError(err, etcdErrors.notLeader)) return "";
        throw err;
      }
      return other.name;
    } finally {
      direct.close();
    }
  }
  return "";
}

/** Whether etcd refused for a reason that passes (no quorum yet, the member shutting down, unreachable). */
function transient(err: unknown): boolean {
  if (isEtcdError(err, etcdErrors.unhealthy) || isEtcdError(err, etcdErrors.stopped)) return true;
  const code = (err as { fields?: { code?: unknown } }).fields?.code;
  return code === 14 || code === 4; // UNAVAILABLE, DEADLINE_EXCEEDED
}

/**
 * Talos's LeaveCluster: remove this member (retrying while the cluster is unhealthy), stop etcd,
 * drop its data. A member that removes itself may stop before it answers: the removal is then
 * read back from the member list.
 */
async function leaveCluster(ctx: EtcdApiContext): Promise<void> {
  const id = await localMemberId(ctx);
  const retry = ctx.leaveRetry ?? { intervalMs: 10_000, totalMs: 5 * 60_000 };
  const deadline = Date.now() + retry.totalMs;
  const removed = async () => !(await withControlPlane(ctx, (c) => c.memberList())).members.some((m) => m.id === id);
  for (;;) {
    try {
      await withControlPlane(ctx, (c) => c.memberRemove(id));
      break;
    } catch (err) {
      const settled =
        (transient(err) || isEtcdError(err, etcdErrors.memberNotFound)) && (await removed().catch(() => false));
      if (settled) break;
      if (!transient(err) || Date.now() > deadline)
        throw new SystemError(`failed to remove member ${id}`, {}, { cause: err });
      await sleep(retry.intervalMs);
    }
  }
  await ctx.stopEtcd().catch((err: unknown) => {
    throw new SystemError("failed to stop etcd", {}, { cause: err });
  });
  await rm(ctx.paths.dataDir, { recursive: true, force: true }).catch((err: unknown) => {
    throw new SystemError(`failed to remove ${ctx.paths.dataDir}`, {}, { cause: err });
  });
}

/** The members as EtcdMemberList lists them, through the control plane's endpoints (Talos: NewClientFromControlPlaneIPs). */
export async function controlPlaneMembers(ctx: EtcdApiContext): Promise<EtcdMemberInfo[]> {
  requireControlPlane(ctx, "member list");
  return (await withControlPlane(ctx, (c) => c.memberList())).members;
}

export function etcdServiceImpl(ctx: EtcdApiContext): ServiceImpl {
  return {
    Bootstrap: bootstrapHandler(ctx),
    EtcdRecover: recoverHandler(ctx, (api) => requireControlPlane(ctx, api)),
    EtcdMemberList: unaryHandler(async (req: { query_local?: boolean }) => {
      requireControlPlane(ctx, "member list");
      const members = req.query_local
        ? (await withLocal(ctx, { requireLeader: true }, (c) => c.memberList())).members
        : await controlPlaneMembers(ctx);
      return {
        messages: [
          {
            legacy_members: members.map((m) => m.name),
            members: members.map((m) => ({
              id: m.id.toString(),
              hostname: m.name,
              peer_urls: m.peerURLs,
              client_urls: m.clientURLs,
              is_learner: m.isLearner,
            })),
          },
        ],
      };
    }),
    EtcdRemoveMemberByID: unaryHandler(async (req: { member_id?: number | string }) => {
      requireControlPlane(ctx, "etcd remove member");
      // A 64-bit ID past 2^53 arrives as its exact decimal string (api/index.ts).
      const id = BigInt(req.member_id ?? 0);
      // Wrapped once the walk is over: an unreachable endpoint's error must reach firstAnswering as it is, to try the next.
      try {
        await withControlPlane(ctx, (c) => c.memberRemove(id));
      } catch (err) {
        const text = `failed to remove member ${id}: ${(err as Error).message}`;
        if (isEtcdError(err, etcdErrors.memberNotFound)) throw new NotFoundError(text);
        throw new SystemError("failed to remove member", {}, { cause: new SystemError(text, {}, { cause: err }) });
      }
      return { messages: [{}] };
    }),
    EtcdLeaveCluster: unaryHandler(async () => {
      requireControlPlane(ctx, "etcd leave");
      await leaveCluster(ctx).catch((err: unknown) => {
        throw failed("failed to leave cluster", err);
      });
      return { messages: [{}] };
    }),
    EtcdForfeitLeadership: unaryHandler(async () => {
      requireControlPlane(ctx, "etcd forfeit leadership");
      const id = await localMemberId(ctx);
      const tls = await adminTls(ctx.paths.pkiDir);
      const member = await withControlPlane(ctx, (c) => forfeitLeadership(c, id, tls)).catch((err: unknown) => {
        throw failed("failed to forfeit leadership", err);
      });
      return { messages: [{ member }] };
    }),
    EtcdSnapshot: async (call: grpc.ServerWritableStream<object, unknown>) => {
      requireControlPlane(ctx, "etcd snapshot");
      const { signal, dispose } = cancellation(call);
      try {
        await withLocal(ctx, {}, async (c) => {
          for await (const bytes of c.snapshot(signal)) if (!(await send(call, { bytes }))) return;
        });
      } catch (err) {
        throw failed("failed reading etcd snapshot", err);
      } finally {
        dispose();
      }
      if (!call.cancelled) call.end();
    },
    EtcdAlarmList: unaryHandler(async () => {
      requireControlPlane(ctx, "etcd alarm list");
      const res = await withLocal(ctx, {}, (c) => c.alarmList()).catch((err: unknown) => {
        throw failed("failed to list etcd alarms", err);
      });
      return { messages: [{ member_alarms: mapAlarms(res.alarms) }] };
    }),
    EtcdAlarmDisarm: unaryHandler(async () => {
      // Talos names this one "etcd alarm list" too.
      requireControlPlane(ctx, "etcd alarm list");
      const res = await withLocal(ctx, {}, (c) => c.alarmDisarm()).catch((err: unknown) => {
        throw failed("failed to disarm etcd alarm", err);
      });
      return { messages: [{ member_alarms: mapAlarms(res.alarms) }] };
    }),
    EtcdDefragment: unaryHandler(async () => {
      requireControlPlane(ctx, "etcd defragment");
      await withLocal(ctx, {}, (c) => c.defragment()).catch((err: unknown) => {
        throw failed("failed to defragment etcd", err);
      });
      return { messages: [{}] };
    }),
    EtcdStatus: unaryHandler(async () => {
      requireControlPlane(ctx, "etcd status");
      const s = await withLocal(ctx, {}, (c) => c.status()).catch((err: unknown) => {
        throw failed("failed to query etcd status", err);
      });
      return {
        messages: [
          {
            member_status: {
              member_id: s.header.memberId.toString(),
              protocol_version: s.version,
              db_size: s.dbSize.toString(),
              db_size_in_use: s.dbSizeInUse.toString(),
              leader: s.leader.toString(),
              raft_index: s.raftIndex.toString(),
              raft_term: s.raftTerm.toString(),
              raft_applied_index: s.raftAppliedIndex.toString(),
              errors: s.errors,
              is_learner: s.isLearner,
            },
          },
        ],
      };
    }),
  };
}
