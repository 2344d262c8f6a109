import * as grpc from "@grpc/grpc-js";
import { promises as fs } from "node:fs";
import net from "node:net";
import path from "node:path";
import { ApplyMode } from "../api/enums.js";
import type { ConfigBundle } from "../config/bundle.js";
import { machinedControllers, Observed } from "../controllers/index.js";
import { writeMachineId } from "../controllers/cluster/node-identity.js";
import { isControlPlane } from "../controllers/secrets/api.js";
import { ConflictError, describeError, SystemError, UnimplementedError } from "../errors.js";
import { addService, bindServer, drainAndClose } from "../grpc/server.js";
import { callLogInterceptor } from "../grpc/call-log.js";
import { addLogTap, logger } from "../log.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../resources/catalog/config.js";
import { registerCatalog } from "../resources/catalog/index.js";
import { MachineStatusId, MachineStatusType, RUNTIME_NAMESPACE, type MachineStage, type MachineStatusSpec, type PlatformMetadataSpec } from "../resources/catalog/runtime.js";
import {
  ApiCertificatesId,
  ApiCertificatesType,
  SECRETS_NAMESPACE,
} from "../resources/catalog/secrets.js";
import { ControllerRuntime, type Controller } from "../resources/controller-runtime.js";
import type { ResourceDefinitionInput } from "../resources/definitions.js";
import { ResourceState } from "../resources/state.js";
import { runApid } from "../apid/apid.js";
import { stateFeed } from "../grpc/resource-watch.js";
import type { ProcessSpec } from "../services/process-runner.js";
import { splitListen } from "../services/readiness.js";
import { Supervisor } from "../services/supervisor.js";
import { ServiceLogs, type LogWriter } from "../services/logs.js";
import { LogShipper, shipKernelLog } from "../services/log-shipping.js";
import { apidService as apidDefinition } from "../services/definitions/apid.js";
import { trustdService } from "../services/definitions/trustd.js";
import { syslogdService } from "../services/definitions/syslogd.js";
import { reloadUdevRules, udevdService, writeUdevRules } from "../services/definitions/udevd.js";
import type { MountedVolume } from "../storage/volumes.js";
import { callTrustd } from "../trustd/client.js";
import { runTrustd } from "../trustd/trustd.js";
import { installComplete } from "../storage/install.js";
import { findSystemDisk } from "../storage/system-disk.js";
import type { BlockSysfs } from "../sys/block.js";
import { noCgroups, type Cgroups } from "../sys/cgroups.js";
import type { Mounter } from "../sys/mount.js";
import type { Paths } from "../sys/paths.js";
import type { Power } from "../sys/power.js";
import type { KernelParams } from "../sys/kernel-params.js";
import type { KernelModules } from "../sys/kernel-modules.js";
import type { SmbiosReader } from "../sys/smbios.js";
import type { VirtualTerminals } from "../sys/vt.js";
import { machinedGuard } from "./access.js";
import { inspectServiceImpl, machineServiceImpl, storageServiceImpl } from "./apis.js";
import { etcdWiring } from "./etcd-wiring.js";
import { manifestApplyLock } from "./manifest-apply-lock.js";
import { clusterServiceImpl, healthDeps } from "./rpc/health.js";
import { systemContainerd, type SystemContainerdOptions } from "./containerd.js";
import { criRuntime, type CriOptions } from "./cri.js";
import { kubernetesServices } from "./k8s-services.js";
import { timeServiceImpl } from "./rpc/time.js";
import type { SystemClock } from "../sys/clock.js";
import { checkConfig, checkMaintenanceMode, maintenanceDryRunDetails, planApply, TryModeTimer, tryTimeoutMs, type ApplyRequest, type ConfigChecker } from "./apply/index.js";
import { dashboardDisabled, dashboardService } from "./dashboard.js";
import { dmesgLines } from "./rpc/dmesg.js";
import { contractTag } from "./version.js";
import { clearInstallFailure, lastInstallFailure, recordInstallFailure } from "./install-failure.js";
import { announceMaintenance } from "./maintenance-console.js";
import { ReplyDeliveries } from "./reply-delivery.js";
import type { NetworkChangeHold } from "../controllers/network/change-hold.js";
import { published } from "./published.js";
import { nodeAddresses, nodeHostname } from "./node-identity.js";
import { EventBus } from "./events.js";
import type { Platform } from "./platform.js";
import { configFromPlatform } from "./platform-config.js";
import { platformNetworkCache } from "./platform-network-cache.js";
import type { PlatformNetwork } from "../controllers/runtime/platform-network.js";
import { readSystemIdentity, type SystemIdentity } from "../sys/dmi.js";
import { ownsDisks, type MachineRuntime } from "./runtime.js";
import { bootSequence, initializeSequence, installSequence, rebootSequence, resetSequence, shutdownSequence, type RebootOptions, type ResetOptions } from "./sequences.js";
import { stageUpgradeSequence, upgradeSequence } from "./sequences.js";
import { Logind } from "./logind/service.js";
import { SequenceAbortedError, type Phase } from "./sequencer.js";
import { SequenceRunner } from "./sequence-runner.js";
import { saveConfig } from "./tasks/state.js";
import type { UpgradeRequest } from "./apis.js";
import { bootPartition, checkUpgradeRequest, pullUpgrade, stageUpgrade, takeStagedUpgrade, type UpgradeOptions } from "./tasks/upgrade.js";
import { settleUpgradeAtBoot } from "./upgrade-trial.js";
import { userEnvironment } from "../config/environment.js";
import { messageSizeOptions } from "../grpc/limits.js";
import { rollbackToOtherSlot } from "../storage/upgrade.js";

const log = logger("machined");

/** The COSI State handlers (from grpc/cosi-server.ts), injected to keep this module testable. */
export type CosiFactory = (state: ResourceState) => Record<string, (...args: never[]) => unknown>;

export interface MachinedOptions {
  paths: Paths;
  platform: Platform;
  block: BlockSysfs;
  mounter: Mounter;
  power: Power;
  /** Kernel arguments (empty in the sandbox). */
  cmdline: Map<string, string[]>;
  /** Parses and validates configurations (config module). */
  configChecker: ConfigChecker<ConfigBundle>;
  cosi: CosiFactory;
  /**
   * How to run apid: the process spec given its extra feature flags, or in
   * this process (`inProcess`: one Node runtime less, see the memory figures).
   */
  apid: { listen: string; spec(flags: string[], environment: string[]): ProcessSpec; inProcess?: boolean; user?: { uid: number; gid: number } };
  /** Where trustd listens on a control-plane node; it runs in this process, reading this machined's store. */
  trustd?: { listen: string };
  /**
   * The networking controllers (DHCP on a node, observe-only in the sandbox), registered in machined's one list,
   * and what an installed node's boot and a config download wait for once they run (settled devices, an address).
   */
  networking?: { controllers: Controller[]; ready?(state: ResourceState, signal: AbortSignal): Promise<void>; hold?: NetworkChangeHold };
  /** Run the system containerd and the image's extension services (absent: neither runs). */
  containerd?: SystemContainerdOptions;
  /** Run the CRI containerd on a node whose config has a cluster (only with the system containerd). */
  cri?: CriOptions;
  /** The clock time sync adjusts: the kernel's on a node, a fake one in a sandbox that asks; none: sync disabled. */
  clock?: SystemClock;
  /** Where the host DNS cache listens (a node: 127.0.0.53:53); absent: none runs. */
  hostDnsListen?: string;
  /** The machine's SMBIOS identity (talos.config= ${uuid} and ${serial}); default: the kernel's DMI attributes. */
  systemIdentity?: () => SystemIdentity;
  /** Definitions other modules own (e.g. networking's), registered with the catalog. */
  extraDefinitions?: readonly ResourceDefinitionInput<never>[];
  /** Where kernel parameters are applied (the sandbox: an overlay that leaves the host alone). */
  kernelParams: KernelParams;
  /** Where `.machine.kernel.modules` are loaded (the sandbox: recorded under its state directory). */
  kernelModules: KernelModules;
  smbios?: SmbiosReader;
  /** Talos's cgroups (a node); unset: none of our own (the sandbox). */
  cgroups?: Cgroups;
  /** Also print every service's log lines on our stderr (the sandbox; a node's console shows machined's alone). */
  echoServiceLogs?: boolean;
  /** The relay program syslogd's socket comes from (agent/native/syslog-relay.c); unset: no syslogd. */
  syslogRelay?: string;
  /** Run udevd (a node); unset: the devices are the host's (the sandbox). */
  udevd?: { udevadm: string };
  /** The virtual terminals the dashboard draws the console summary on (a node); unset: no dashboard. */
  terminals?: VirtualTerminals;
  signal: AbortSignal;
}

export interface Machined {
  state: ResourceState;
  supervisor: Supervisor;
  /** Resolves when machined has stopped. */
  done: Promise<void>;
}

/**
 * machined: owns the resource store and the one controller runtime, serves the node
 * API on its unix socket, and runs the sequences of sequences.ts: initialize (config
 * from STATE, else maintenance mode), install (metal, not installed), boot, and the
 * lifecycle ones (reboot, shutdown, reset) the API asks for.
 */
export async function startMachined(opts: MachinedOptions): Promise<Machined> {
  const { paths, platform } = opts;
  const installFailure = lastInstallFailure(paths);
  const state = new ResourceState();
  registerCatalog(state, opts.extraDefinitions ?? []);

  const cgroups = opts.cgroups ?? noCgroups;
  try {
    cgroups.setup(process.pid);
  } catch (err) {
    log.error("creating the cgroups failed: services run in the root group", { error: describeError(err) });
  }
  const echo = opts.echoServiceLogs ? (id: string, line: Buffer) => void (id !== "machined" && process.stderr.write(line)) : undefined;
  const supervisor = new Supervisor(undefined, undefined, undefined, { cgroups, logs: new ServiceLogs(undefined, echo) });
  // machined's own log is a service log too (`talosctl logs machined`).
  const machinedLog = supervisor.logs.writer("machined");
  // The controllers' lines go to their own log, as Talos's (`talosctl logs controller-runtime`, the support bundle).
  const controllerRuntimeLog = supervisor.logs.writer("controller-runtime");
  // trustd runs in this process; its lines still go to its own log (`talosctl logs trustd`), registered by its first line.
  let trustdLog: LogWriter | undefined;
  const logOf = (component: string) => (component === "controller-runtime" ? controllerRuntimeLog : component === "trustd" ? (trustdLog ??= supervisor.logs.writer("trustd")) : machinedLog);
  const untap = addLogTap((line, component) => logOf(component).write(line + "\n"));
  const shipper = new LogShipper(supervisor.logs);
  // udevd first, as Talos's startUdevd, and before this process builds its API server: its first trigger and
  // settle (seconds under emulation, waiting on the kernel and its workers) gate the links, DHCP and so the
  // maintenance API, and now overlap the rest of machined's start (issue 16). Unlike Talos the boot does not
  // wait for the settle (disks are found through sysfs); the links do: DevicesStatus turns ready once udevd is healthy.
  if (opts.udevd) {
    supervisor.start(udevdService({ udevadm: opts.udevd.udevadm, controlSocket: path.join(paths.run, "udev", "control") })).catch((err: unknown) => log.error("starting udevd failed", { error: describeError(err) }));
    // Its launch reaches the spawn after a few promise hops: let them run before the synchronous building below holds the event loop.
    await new Promise((resolve) => setImmediate(resolve));
  }
  // talos.logging.kernel=<udp|tcp URL>: the kernel log goes there too, from the first record.
  const kernelLogEndpoint = opts.cmdline.get("talos.logging.kernel")?.at(-1);
  if (kernelLogEndpoint) {
    shipKernelLog(kernelLogEndpoint, opts.signal).catch((err: unknown) => log.error("sending the kernel log failed", { endpoint: kernelLogEndpoint, error: describeError(err) }));
  }
  const cri = opts.cri && opts.containerd ? criRuntime(paths, state, opts.cri) : undefined;
  const containerd = opts.containerd ? await systemContainerd(paths, state, { ...opts.containerd, environment: () => userEnvironment(opts.cmdline, activeConfig.get()), ...(platform.mode !== "container" ? { mounter: opts.mounter } : {}) }) : undefined;

  // What only machined knows, reported to the controllers that publish it (the one writer of each type).
  const stage = new Observed<MachineStage>("booting");
  const activeConfig = new Observed<ConfigBundle | undefined>(undefined);
  const environment = () => userEnvironment(opts.cmdline, activeConfig.get());
  const k8s = cri ? kubernetesServices({ cri, supervisor, state, paths, registries: () => activeConfig.get()?.v1alpha1()?.machine?.registries, env: environment, container: platform.mode === "container" }) : undefined;
  const etcd = etcdWiring({ state, supervisor, paths, machineType: () => activeConfig.get()?.machineType, ...(k8s ? { runner: k8s.etcdRunner, etcdutl: k8s.etcdutl, env: environment } : {}) });
  const volumes = new Observed<ReadonlyMap<string, MountedVolume>>(new Map());
  const metaKeys = new Observed<ReadonlyMap<number, string>>(new Map());
  const platformMetadata = new Observed<PlatformMetadataSpec | undefined>(undefined);
  const platformNetwork = new Observed<PlatformNetwork | undefined>(undefined);

  const events = new EventBus();
  supervisor.onChange((status, event) => events.serviceState(status, event));
  // Every change of stage or readiness is a MachineStatusEvent (talosctl's --wait trackers follow them).
  state.watch<MachineStatusSpec>({ namespace: RUNTIME_NAMESPACE, type: MachineStatusType, id: MachineStatusId }, { signal: opts.signal }, (ev) => {
    if (ev.type === "destroyed") return;
    const before = ev.old?.spec;
    const spec = ev.resource.spec;
    if (before?.stage !== spec.stage || before.status.ready !== spec.status.ready) events.machineStatus(spec);
  });
  let mode: "maintenance" | "normal" | "installing" = "maintenance";
  let rbac = true;
  const setStage = (next: MachineStage) => stage.set(next);

  // Every accepted configuration becomes the one this boot runs with; activating and
  // saving read it when they run, so concurrent applies end with one config, stored and active.
  let received: (text: string) => void = () => undefined;
  const maintenanceConfig = new Promise<string>((resolve) => (received = resolve));
  let maintenanceLock: Promise<unknown> = Promise.resolve();

  const r: MachineRuntime = {
    paths,
    platform,
    state,
    supervisor,
    block: opts.block,
    mounter: opts.mounter,
    power: opts.power,
    cmdline: opts.cmdline,
    systemDisk: undefined,
    configText: undefined,
    meta: undefined,
    volumes: new Map(),
    setStage,
    maintenance: async () => {
      setStage("maintenance");
      // The console says where to apply a config only once apid listens there.
      await supervisor.start(apidService());
      await announceMaintenance(state, opts.apid.listen, maintenanceConsole.signal, installFailure);
      // A stop (SIGTERM) while waiting for a configuration ends the wait, so machined can stop.
      return new Promise<string>((resolve, reject) => {
        maintenanceConfig.then(resolve, reject);
        if (opts.signal.aborted) reject(new SequenceAbortedError("stopped while waiting for a configuration"));
        opts.signal.addEventListener("abort", () => reject(new SequenceAbortedError("stopped while waiting for a configuration")), { once: true });
      });
    },
    services: () => {
      // apid first: activation has usually started it already (and restarts it on feature changes).
      const machineType = activeConfig.get()?.machineType;
      const listen = opts.trustd?.listen;
      const trustd = listen !== undefined && isControlPlane(machineType) ? [trustdService({ listen, run: (signal) => runTrustd({ listen, state, signal }) })] : [];
      const etcdService = k8s && isControlPlane(machineType) ? [etcd.service()] : [];
      return [apidService(), ...trustd, ...(containerd?.services() ?? []), ...(cri?.services(activeConfig.get()) ?? []), ...etcdService];
    },
    platformConfig: (wantConfig) =>
      configFromPlatform(
        {
          platform,
          cmdline: opts.cmdline,
          state,
          mounter: opts.mounter,
          mountDir: path.join(paths.system, "platform-config"),
          identity: opts.systemIdentity ?? (() => readSystemIdentity()),
          meta: (tag) => r.meta?.get(tag),
          signal: opts.signal,
          networkReady: (signal) => opts.networking?.ready?.(state, signal) ?? Promise.resolve(),
          log: logger("platform"),
          checker: opts.configChecker,
          events,
          setMetadata: (m) => platformMetadata.set(m),
          setNetwork: (n) => platformNetwork.set(n),
        },
        wantConfig,
      ),
    mountsChanged: () => volumes.set(new Map(r.volumes)),
    metaChanged: () => metaKeys.set(r.meta?.keys() ?? new Map()),
    logind: new Logind(path.join(paths.run, "dbus", "system_bus_socket")),
    stopPods: async (action) => cri?.stopPods(action),
  };

  const controllers = new ControllerRuntime(state);
  const apidHost = splitListen(opts.apid.listen).host;
  const runsTrustd = (t: Parameters<typeof isControlPlane>[0]) => opts.trustd !== undefined && isControlPlane(t);
  for (const c of machinedControllers({
    sources: {
      activeConfig,
      stage,
      volumes,
      metaKeys,
      platformMetadata,
      platformNetwork,
      services: { list: () => supervisor.list(), onChange: (l) => supervisor.onChange(l) },
      requiredServices: (t) => [
        ...["apid", "machined"],
        ...(k8s ? ["kubelet"] : []),
        ...(k8s && isControlPlane(t) ? ["etcd"] : []),
        ...(runsTrustd(t) ? ["trustd"] : []),
      ],
    },
    secrets: {
      fallback: () => ({ addresses: nodeAddresses(state), ...nodeHostname(state) }),
      maintenanceListenAddresses: ["", "0.0.0.0", "::"].includes(apidHost) ? [] : [apidHost],
      callTrustd,
      systemDir: paths.system,
    },
    network: opts.networking?.controllers ?? [],
    kernelParams: { params: opts.kernelParams, container: platform.mode === "container" },
    platformNetworkCache: platformNetworkCache(paths, platform.mode === "container"),
    kernelModules: opts.kernelModules,
    ...(opts.smbios ? { smbios: opts.smbios } : {}),
    addressEvents: (e) => events.publish("machine.AddressEvent", e),
    extensions: () => fs.readFile(path.join(paths.root, "etc", "extensions.yaml"), "utf8").catch((err: NodeJS.ErrnoException) => (err.code === "ENOENT" ? undefined : Promise.reject(err))),
    time: opts.clock ? { clock: opts.clock } : {},
    etcd: etcd.controllers,
    nodeIdentity: { stateDir: paths.state, container: platform.mode === "container", writeMachineId: (text) => writeMachineId(path.join(paths.etc, "machine-id"), text) },
    ...(k8s ? { kubelet: k8s.kubelet } : {}),
    manifestApplyLock: manifestApplyLock(paths),
    ...(opts.hostDnsListen ? { hostDns: { listen: opts.hostDnsListen } } : {}),
    udevd: opts.udevd !== undefined,
  })) {
    controllers.register(c);
  }
  if (cri) controllers.register(cri.controller);

  // One sequence at a time; lifecycle requests take over the ones Talos lets them.
  const sequences = new SequenceRunner((actorId) => events.sequenceListener(actorId), opts.signal);
  const lifecycle = (name: "reboot" | "shutdown" | "reset", next: MachineStage, phases: () => Phase[], actorId = "") =>
    sequences.request(
      name,
      () => {
        setStage(next);
        return phases();
      },
      actorId,
    );

  const tryTimer = new TryModeTimer((previous) => {
    log.info("try mode timed out: reverting to the previous configuration");
    activate(previous.toYaml()).catch((err: unknown) => log.error("reverting the tried configuration failed", { error: describeError(err) }));
  }, opts.signal);

  // An apply's network changes wait for its reply to leave (Talos #8566).
  const replies = new ReplyDeliveries(opts.networking?.hold);
  const applyConfiguration = async (req: ApplyRequest, call: grpc.ServerUnaryCall<ApplyRequest, unknown>): Promise<Record<string, unknown>> => {
    const reqMode = req.mode ?? ApplyMode.REBOOT;
    const data = Buffer.from(req.data ?? Buffer.alloc(0));
    if (mode === "installing") throw new ConflictError("the node is installing: apply the configuration again once it has rebooted");
    if (mode === "maintenance") {
      checkMaintenanceMode(reqMode);
      const run = maintenanceLock.then(async () => {
        const { config, warnings } = checkConfig(opts.configChecker, data);
        if (req.dry_run) return { warnings, mode: reqMode, mode_details: maintenanceDryRunDetails };
        // A config without a v1alpha1 document is kept but does not end maintenance (reference §2).
        if (config.completeForBoot) {
          replies.expect(call.metadata);
          r.configText = data.toString("utf8");
          // Stored before the reply where there is somewhere to store it (STATE mounted, or the sandbox's
          // state directory); a node that is not installed stores it on STATE during install.
          if (!ownsDisks(r) || r.volumes.has("STATE")) await saveConfig(r);
          received(r.configText);
          log.info("configuration received in maintenance mode");
        }
        return { warnings };
      });
      maintenanceLock = run.catch(() => undefined);
      return run;
    }
    const { config, warnings } = checkConfig(opts.configChecker, data);
    const current = state.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec;
    const timeoutMs = tryTimeoutMs(req.try_mode_timeout);
    // Any apply but another try confirms (or ends) a config being tried.
    if (reqMode !== ApplyMode.TRY) tryTimer.cancel();
    const plan = planApply({ current, next: config, mode: reqMode, dryRun: req.dry_run === true, tryTimeoutMs: timeoutMs });
    if (req.dry_run) return { mode: plan.mode, mode_details: plan.details };
    const text = data.toString("utf8");
    if (plan.action === "try") {
      // A tried config is neither stored nor this boot's config: a reboot, or the timeout, goes back to the active one.
      tryTimer.cancel();
      replies.expect(call.metadata);
      await activate(text);
      tryTimer.start(current!, timeoutMs);
      return { warnings, mode: plan.mode, mode_details: plan.details };
    }
    r.configText = text;
    await saveConfig(r);
    if (plan.action === "staged") return { warnings, mode: plan.mode, mode_details: plan.details };
    if (plan.action === "reboot") {
      lifecycle("reboot", "rebooting", () => rebootSequence(r));
      return { warnings, mode: plan.mode, mode_details: plan.details };
    }
    replies.expect(call.metadata);
    await activate(text);
    return { warnings, mode: plan.mode, mode_details: plan.details };
  };

  const server = new grpc.Server({ ...messageSizeOptions, interceptors: [callLogInterceptor(log)] });
  const guard = machinedGuard(() => mode !== "normal");
  replies.register(server);
  const ctx = {
    platform,
    supervisor,
    block: opts.block,
    systemDisk: () => r.systemDisk?.disk,
    inMaintenance: () => mode !== "normal",
    rbacEnabled: () => rbac,
    activeConfig: () => state.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec,
    applyConfiguration,
    reboot: (o: RebootOptions, actorId: string) => lifecycle("reboot", "rebooting", () => rebootSequence(r, o), actorId),
    shutdown: (actorId: string) => lifecycle("shutdown", "shutting down", () => shutdownSequence(r), actorId),
    reset: (o: ResetOptions, actorId: string) => lifecycle("reset", "resetting", () => resetSequence(r, o), actorId),
    upgrade: async (req: UpgradeRequest, actorId: string) => {
      const image = checkUpgradeRequest(req.image);
      if (!ownsDisks(r) || !r.meta || mode === "installing") throw new ConflictError("Basalt is not installed", { mode });
      // As Talos's maintenance service: none of the options there.
      if (mode === "maintenance" && (req.preserve || req.stage || req.force)) throw new UnimplementedError("upgrade --preserve, --stage, and --force are not supported in maintenance mode");
      const o: UpgradeOptions = { image, preserve: req.preserve === true, force: req.force === true, rebootMode: req.reboot_mode === 1 ? "POWERCYCLE" : "DEFAULT" };
      log.info("upgrade request received", { ...o, stage: req.stage === true });
      if (req.stage) {
        await stageUpgrade(r, o);
        sequences.request("stageUpgrade", () => (setStage("upgrading"), stageUpgradeSequence(r)), actorId);
        return;
      }
      const pulled = await pullUpgrade(r, image, activeConfig.get());
      sequences.request("upgrade", () => (setStage("upgrading"), upgradeSequence(r, pulled, o)), actorId);
    },
    rollback: async (actorId: string) => {
      if (!ownsDisks(r) || !r.meta) throw new ConflictError("system disk not found");
      await rollbackToOtherSlot(bootPartition(r, "boot-upgrade"), r.meta);
      r.metaChanged();
      lifecycle("reboot", "rebooting", () => rebootSequence(r), actorId);
    },
    events,
    containerd: containerd && ((namespace: string) => containerd.client(namespace)),
    ...(cri ? { cri: cri.access((id) => supervisor.get(id)) } : {}),
    meta: () => {
      if (!r.meta) throw new ConflictError("META is not available: the node is not installed");
      return { store: r.meta, published: () => r.metaChanged() };
    },
    etcd: etcd.api,
  };
  addService(server, "machine.MachineService", machineServiceImpl(ctx), guard);
  addService(server, "storage.StorageService", storageServiceImpl(ctx), guard);
  addService(server, "inspect.InspectService", inspectServiceImpl({ controllerDependencies: () => controllers.dependencies() }), guard);
  addService(server, "time.TimeService", timeServiceImpl({ activeConfig: ctx.activeConfig, clock: opts.clock ?? { now: () => Date.now() } }), guard);
  addService(server, "cluster.ClusterService", clusterServiceImpl(healthDeps(state, supervisor, platform, ctx.activeConfig, { apidSocket: paths.apidSocket, etcd: etcd.api })), guard);
  addService(server, "securityapi.SecurityService", {}, guard);
  addService(server, "cosi.resource.State", opts.cosi(state) as never, guard);
  await listenUnix(server, paths.machinedSocket);
  // Healthy when its API socket accepts a connection (as Talos checks machined).
  supervisor.registerSelf("machined", () => unixProbe(paths.machinedSocket));
  // Early services (Talos's earlyServices phase): they run in maintenance mode too. udevd started above.
  const udevRulesFile = path.join(paths.run, "udev", "rules.d", "99-basalt.rules");
  // Talos's "dashboard" phase, skipped with talos.dashboard.disabled=1.
  if (opts.terminals && !dashboardDisabled(opts.cmdline)) {
    const dashboard = dashboardService({
      state,
      terminals: opts.terminals,
      version: contractTag,
      apiPort: splitListen(opts.apid.listen).port,
      installFailure,
      kernelLog: (signal) => dmesgLines(signal),
      afterUdevd: opts.udevd !== undefined,
    });
    supervisor.start(dashboard).catch((err: unknown) => log.error("starting the dashboard failed", { error: describeError(err) }));
  }
  if (opts.syslogRelay) {
    supervisor.start(syslogdService({ relay: opts.syslogRelay, socket: paths.syslogSocket })).catch((err: unknown) => log.error("starting syslogd failed", { error: describeError(err) }));
  }
  if (opts.apid.user && !opts.apid.inProcess) await openSocketsTo(opts.apid.user, paths);
  log.info("machined API listening", { socket: paths.machinedSocket });

  const apidService = () => {
    const features = { rbac, checkExtKeyUsage: apidCheckExtKeyUsage };
    const maintenance = mode === "maintenance";
    // In maintenance mode the API is served from machined's own process, as Talos's maintenance service
    // runs inside machined: the node answers without starting a second Node runtime first (17 s of a
    // 75 s boot under TCG) and idles in one process. A configuration brings apid up as its own process.
    const run = opts.apid.inProcess || maintenance
      ? { inProcess: (signal: AbortSignal) => runApid({ listen: opts.apid.listen, machinedSocket: paths.machinedSocket, apidSocket: paths.apidSocket, enableRbac: features.rbac, checkExtKeyUsage: features.checkExtKeyUsage, resources: stateFeed(state), signal }) }
      : { process: opts.apid.spec([`--enable-rbac=${features.rbac}`, `--check-ext-key-usage=${features.checkExtKeyUsage}`], userEnvironment(opts.cmdline, activeConfig.get())) };
    return apidDefinition({ state, listen: opts.apid.listen, maintenance, run });
  };
  let apidCheckExtKeyUsage = false;

  const maintenanceConsole = new AbortController();
  opts.signal.addEventListener("abort", () => maintenanceConsole.abort(), { once: true });
  // The maintenance certificates go with the maintenance stage (secrets controllers); the console stops re-printing.
  const leaveMaintenance = () => maintenanceConsole.abort();

  // Activations run one at a time: each may restart apid.
  let activating = Promise.resolve();
  const activate = (text: string): Promise<void> => {
    const run = activating.then(async () => {
      // The reply to the apply that sent it travels through apid, which this may restart: let it leave first.
      await new Promise((resolve) => setImmediate(resolve));
      const bundle = opts.configChecker.parse(Buffer.from(text));
      const features = bundle.v1alpha1WithDefaults()?.machine?.features;
      const nextRbac = features?.rbac !== false;
      const nextExtKeyUsage = features?.apidCheckExtKeyUsage === true;
      const restartApid = mode !== "normal" || nextRbac !== rbac || nextExtKeyUsage !== apidCheckExtKeyUsage;
      rbac = nextRbac;
      apidCheckExtKeyUsage = nextExtKeyUsage;
      activeConfig.set(bundle);
      try {
        shipper.configure((bundle.v1alpha1WithDefaults()?.machine?.logging?.destinations ?? []).map((d) => ({ endpoint: d.endpoint ?? "", format: "json_lines", ...(d.extraTags ? { extraTags: d.extraTags } : {}) })));
      } catch (err) {
        log.error("machine.logging.destinations not applied", { error: describeError(err) });
      }
      if (opts.udevd && (await writeUdevRules(udevRulesFile, bundle.v1alpha1WithDefaults()?.machine?.udev?.rules ?? []))) {
        await reloadUdevRules(opts.udevd.udevadm).catch((err: unknown) => log.error("reloading the udev rules failed", { error: describeError(err) }));
      }
      // Its controller publishes it (an unchanged config is not written again): what follows reads the resource.
      await published<ConfigBundle>(state, CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, opts.signal, (spec) => spec.toYaml() === text);
      if (mode !== "normal") {
        mode = "normal";
        leaveMaintenance();
      }
      if (restartApid) {
        // apid takes its features as flags (as Talos starts it with them); restart it to apply.
        await supervisor.stop("apid", "machine.features changed (apid takes them as flags)");
        const started = supervisor.start(apidService());
        // Without certificates apid waits (Preparing) for them; activating must not wait with it.
        if (state.get(SECRETS_NAMESPACE, ApiCertificatesType, ApiCertificatesId)) await started;
        else started.catch((err: unknown) => log.error("starting apid failed", { error: describeError(err) }));
      }
    });
    activating = run.catch(() => undefined);
    return run;
  };

  // An upgrade left in META 0x06 is settled (confirmed later, or reported failed) before the boot goes on; never fatal.
  const settleUpgrade = () =>
    settleUpgradeAtBoot(r, { signal: opts.signal, rollback: () => lifecycle("reboot", "rebooting", () => rebootSequence(r)) }).catch((err: unknown) =>
      log.error("settling the previous upgrade failed", { error: describeError(err) }),
    );
  // upgrade --stage: performed now, with this boot's configuration; a failed pull boots on as before.
  const runStagedUpgrade = async (): Promise<boolean> => {
    const staged = await takeStagedUpgrade(r);
    if (!staged) return false;
    try {
      const pulled = await pullUpgrade(r, staged.image, opts.configChecker.parse(Buffer.from(r.configText!)));
      setStage("upgrading");
      await sequences.run("upgrade", upgradeSequence(r, pulled, staged));
      return true;
    } catch (err) {
      log.error("the staged upgrade failed: booting the installed system", { image: staged.image, error: describeError(err) });
      return false;
    }
  };
  const untilStopped = () => new Promise<void>((resolve) => (opts.signal.aborted ? resolve() : opts.signal.addEventListener("abort", () => resolve(), { once: true })));
  const done = (async () => {
    try {
      controllers.start(opts.signal);
      const found = ownsDisks(r) ? findSystemDisk(opts.block) : undefined;
      const installed = found !== undefined && (await installComplete(found.partitions.BOOT, opts.mounter, path.join(paths.system, "boot")));
      // An installed node boots once udevd has settled and it has an address. One that is not goes on to its config
      // (a download or a labelled volume waits for what it needs) and, without one, to maintenance mode, whose listener
      // then starts beside udevd's coldplug and DHCP (the links still wait for the settle) and whose banner waits for an
      // address. Talos enters maintenance only after udevd's settle: 1-2 s of CPU under emulation (issue 16).
      if (installed) await opts.networking?.ready?.(state, opts.signal);
      if (found && !installed) log.warn("the system disk's install did not finish: it will be installed again", { disk: found.disk });
      await sequences.run("initialize", initializeSequence(r, { installed }));
      if (ownsDisks(r) && !installed) {
        // A configuration arrived in maintenance mode on a node that is not installed: install, then kexec.
        mode = "installing";
        setStage("installing");
        try {
          await sequences.run("install", installSequence(r));
        } catch (err) {
          // The machined init starts next is in maintenance again: it says why.
          if (!opts.signal.aborted && !sequences.lifecycleRequested) recordInstallFailure(paths, err);
          throw err;
        }
        clearInstallFailure(paths);
      } else {
        if (installed) await settleUpgrade();
        const staged = installed ? await runStagedUpgrade() : false;
        if (staged) return await untilStopped();
        setStage("booting");
        await activate(r.configText!);
        await sequences.run("boot", bootSequence(r));
        setStage("running");
      }
      // What ends this boot (init's reboot or kexec, a lifecycle sequence, a signal) stops machined.
      await untilStopped();
    } catch (err) {
      if (opts.signal.aborted) return;
      // A reboot, reset or shutdown took over the sequence that failed here; it ends the boot.
      if (sequences.lifecycleRequested) {
        await untilStopped();
        return;
      }
      throw err;
    } finally {
      await supervisor.stopAll();
      await supervisor.logs.closeFiles();
      shipper.close();
      untap();
      // Open streams (Events, Dmesg --follow) never end by themselves: give calls a moment, then cut them.
      await drainAndClose(server, 2000);
      containerd?.close();
      cri?.close();
      await fs.rm(paths.machinedSocket, { force: true });
    }
  })();
  return { state, supervisor, done };
}

/**
 * apid runs unprivileged (uid/gid 50, as on Talos): machined's socket is its to connect to (the
 * directory 0771, the socket owned by apid's user), and apid's own socket directory is apid's.
 */
async function openSocketsTo(user: { uid: number; gid: number }, paths: Paths): Promise<void> {
  await fs.chmod(path.dirname(paths.machinedSocket), 0o771);
  await fs.chown(paths.machinedSocket, user.uid, user.gid);
  await fs.mkdir(path.dirname(paths.apidSocket), { recursive: true, mode: 0o750 });
  await fs.chown(path.dirname(paths.apidSocket), user.uid, user.gid);
}

function unixProbe(socket: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const conn = net.connect(socket);
    conn.once("connect", () => {
      conn.destroy();
      resolve();
    });
    conn.once("error", (err) => reject(new SystemError(`machined's socket ${socket} does not answer`, { socket }, { cause: err })));
  });
}

async function listenUnix(server: grpc.Server, socket: string): Promise<void> {
  await fs.mkdir(path.dirname(socket), { recursive: true, mode: 0o771 });
  await fs.rm(socket, { force: true });
  await bindServer(server, `unix:${socket}`, grpc.ServerCredentials.createInsecure());
}

