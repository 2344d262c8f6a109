import { promises as fs } from "node:fs";
import path from "node:path";
import type { ConfigBundle } from "../config/bundle.js";
import { machinedControllers, Observed } from "../controllers/index.js";
import { writeMachineId } from "../controllers/cluster/node-identity.js";
import { SECCOMP_PROFILES_DIRECTORY } from "../controllers/cri/seccomp-profile-file.js";
import { isControlPlane } from "../controllers/secrets/api.js";
import { ConflictError, describeError } from "../errors.js";
import { drainAndClose } from "../grpc/server.js";
import { addLogTap, logger } from "../log.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../resources/catalog/config.js";
import { registerCatalog } from "../resources/catalog/index.js";
import {
  MachineStatusId,
  MachineStatusType,
  RUNTIME_NAMESPACE,
  type MachineStage,
  type MachineStatusSpec,
  type PlatformMetadataSpec,
} from "../resources/catalog/runtime.js";
import { ControllerRuntime, type Controller } from "../resources/controller-runtime.js";
import type { ResourceDefinitionInput } from "../resources/definitions.js";
import { ResourceState } from "../resources/state.js";
import { splitHostPort } from "../sys/host-port.js";
import { Supervisor } from "../services/supervisor.js";
import { ServiceLogs, type LogWriter } from "../services/logs.js";
import { LogShipper, shipKernelLog } from "../services/log-shipping.js";
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
import type { MachineApiContext } from "./apis.js";
import { ApidControl, type ApidLaunch } from "./apid-control.js";
import { serveMachinedApi, unixProbe } from "./api-server.js";
import { etcdWiring, type EtcdWiring } from "./etcd-wiring.js";
import { manifestApplyLock } from "./manifest-apply-lock.js";
import { healthDeps } from "./rpc/health.js";
import { systemContainerd, type SystemContainerd, type SystemContainerdOptions } from "./containerd.js";
import { criRuntime, type CriOptions, type CriRuntime } from "./cri.js";
import { kubernetesServices, type KubernetesServices } from "./k8s-services.js";
import type { SystemClock } from "../sys/clock.js";
import type { ConfigChecker } from "./apply/index.js";
import { ConfigApplier } from "./apply/config-applier.js";
import { dashboardDisabled, dashboardService } from "./dashboard.js";
import { dmesgLines } from "./rpc/dmesg.js";
import { contractTag } from "./version.js";
import { clearInstallFailure, lastInstallFailure, recordInstallFailure } from "./install-failure.js";
import { announceMaintenance } from "./maintenance-console.js";
import type { NetworkChangeHold } from "../controllers/network/change-hold.js";
import { nodeAddresses, nodeHostname } from "./node-identity.js";
import { EventBus } from "./events.js";
import type { Platform } from "./platform.js";
import { configFromPlatform } from "./platform-config.js";
import { platformEvents } from "./platform-events.js";
import { cloudPlatform } from "./platforms/index.js";
import { fetchMetadataHttp } from "./platforms/metadata-http.js";
import { eventRetry } from "./platforms/retry.js";
import { platformNetworkCache } from "./platform-network-cache.js";
import { LinkStatusType, type LinkStatusSpec } from "../resources/catalog/network/links.js";
import { NETWORK_NAMESPACE } from "../resources/catalog/network/names.js";
import { kernelPacketCaptureSource } from "../sys/packet-capture.js";
import type { PlatformNetwork } from "../controllers/runtime/platform-network.js";
import { readSystemIdentity, type SystemIdentity } from "../sys/dmi.js";
import { ownsDisks, type MachineRuntime } from "./runtime.js";
import {
  bootSequence,
  initializeSequence,
  installSequence,
  rebootSequence,
  resetSequence,
  shutdownSequence,
  type RebootOptions,
  type ResetOptions,
} from "./sequences.js";
import { Logind } from "./logind/service.js";
import { stopDBus } from "./tasks/pods.js";
import type { Phase } from "./sequencer.js";
import { SequenceRunner } from "./sequence-runner.js";
import { upgradeRequests, type UpgradeRequests } from "./tasks/upgrade-requests.js";
import { userEnvironment } from "../config/environment.js";

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
  /** How to run apid: its own process (the spec given its feature flags), or in this one. */
  apid: ApidLaunch;
  /** Where trustd listens on a control-plane node; it runs in this process, reading this machined's store. */
  trustd?: { listen: string };
  /**
   * The networking controllers (DHCP on a node, observe-only in the sandbox), registered in machined's one list,
   * and what an installed node's boot and a config download wait for once they run (settled devices, an address).
   */
  networking?: {
    controllers: Controller[];
    ready?(state: ResourceState, signal: AbortSignal): Promise<void>;
    hold?: NetworkChangeHold;
  };
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

/** The parts of one machined that the functions below startMachined wire together. */
interface Parts {
  opts: MachinedOptions;
  state: ResourceState;
  supervisor: Supervisor;
  events: EventBus;
  apid: ApidControl;
  containerd: SystemContainerd | undefined;
  cri: CriRuntime | undefined;
  k8s: KubernetesServices | undefined;
  etcd: EtcdWiring;
  /** Why the last install failed, if it did (the maintenance console and the dashboard say it). */
  installFailure: string | undefined;
  /** Ends the maintenance console's re-printing. */
  maintenanceConsole: AbortSignal;
  // What only machined knows, reported to the controllers that publish it (the one writer of each type).
  stage: Observed<MachineStage>;
  activeConfig: Observed<ConfigBundle | undefined>;
  volumes: Observed<ReadonlyMap<string, MountedVolume>>;
  metaKeys: Observed<ReadonlyMap<number, string>>;
  platformMetadata: Observed<PlatformMetadataSpec | undefined>;
  platformNetwork: Observed<PlatformNetwork | undefined>;
}

type Lifecycle = (
  name: "reboot" | "shutdown" | "reset",
  next: MachineStage,
  phases: () => Phase[],
  actorId?: string,
) => void;

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
  const supervisor = newSupervisor(opts);
  const untap = routeLogLines(supervisor);
  const shipper = new LogShipper(supervisor.logs);
  // udevd first, as Talos's startUdevd, and before this process builds its API server: its first trigger and
  // settle (seconds under emulation, waiting on the kernel and its workers) gate the links, DHCP and so the
  // maintenance API, and overlap the rest of machined's start. Unlike Talos the boot does not wait for the
  // settle (disks are found through sysfs); the links do: DevicesStatus turns ready once udevd is healthy.
  if (opts.udevd) {
    supervisor
      .start(udevdService({ udevadm: opts.udevd.udevadm, controlSocket: path.join(paths.run, "udev", "control") }))
      .catch((err: unknown) => log.error("starting udevd failed", { error: describeError(err) }));
    // Its launch reaches the spawn after a few promise hops: let them run before the synchronous building below holds the event loop.
    await new Promise((resolve) => setImmediate(resolve));
  }
  // talos.logging.kernel=<udp|tcp URL>: the kernel log goes there too, from the first record.
  const kernelLogEndpoint = opts.cmdline.get("talos.logging.kernel")?.at(-1);
  if (kernelLogEndpoint) {
    shipKernelLog(kernelLogEndpoint, opts.signal).catch((err: unknown) =>
      log.error("sending the kernel log failed", { endpoint: kernelLogEndpoint, error: describeError(err) }),
    );
  }
  const cri = opts.cri && opts.containerd ? criRuntime(paths, state, opts.cri) : undefined;
  const containerd = opts.containerd
    ? await systemContainerd(paths, state, {
        ...opts.containerd,
        environment: () => userEnvironment(opts.cmdline, activeConfig.get()),
        ...(platform.mode !== "container" ? { mounter: opts.mounter } : {}),
      })
    : undefined;

  // What only machined knows, reported to the controllers that publish it (the one writer of each type).
  const stage = new Observed<MachineStage>("booting");
  const activeConfig = new Observed<ConfigBundle | undefined>(undefined);
  const environment = () => userEnvironment(opts.cmdline, activeConfig.get());
  const k8s = cri
    ? kubernetesServices({
        cri,
        supervisor,
        state,
        paths,
        registries: () => activeConfig.get()?.v1alpha1()?.machine?.registries,
        env: environment,
        container: platform.mode === "container",
      })
    : undefined;
  const etcd = etcdWiring({
    state,
    supervisor,
    paths,
    machineType: () => activeConfig.get()?.machineType,
    ...(k8s ? { runner: k8s.etcdRunner, etcdutl: k8s.etcdutl, env: environment } : {}),
  });
  const volumes = new Observed<ReadonlyMap<string, MountedVolume>>(new Map());
  const metaKeys = new Observed<ReadonlyMap<number, string>>(new Map());
  const platformMetadata = new Observed<PlatformMetadataSpec | undefined>(undefined);
  const platformNetwork = new Observed<PlatformNetwork | undefined>(undefined);
  const events = machineEvents(state, supervisor, opts.signal);

  const apid: ApidControl = new ApidControl({
    launch: opts.apid,
    paths,
    state,
    supervisor,
    environment,
    inMaintenance: () => applier.mode === "maintenance",
  });
  const maintenanceConsole = new AbortController();
  opts.signal.addEventListener("abort", () => maintenanceConsole.abort(), { once: true });
  const parts: Parts = {
    opts,
    state,
    supervisor,
    events,
    apid,
    containerd,
    cri,
    k8s,
    etcd,
    installFailure,
    maintenanceConsole: maintenanceConsole.signal,
    stage,
    activeConfig,
    volumes,
    metaKeys,
    platformMetadata,
    platformNetwork,
  };
  const r = machineRuntime(parts, () => applier.waitForConfig());
  // One sequence at a time; lifecycle requests take over the ones Talos lets them.
  const sequences = new SequenceRunner((actorId) => events.sequenceListener(actorId), opts.signal);
  const lifecycle: Lifecycle = (name, next, phases, actorId = "") =>
    sequences.request(
      name,
      () => {
        r.setStage(next);
        return phases();
      },
      actorId,
    );
  const applier: ConfigApplier = new ConfigApplier({
    runtime: r,
    checker: opts.configChecker,
    apid,
    configure: (bundle) => configure(parts, shipper, bundle),
    // The maintenance certificates go with the maintenance stage (secrets controllers); the console stops re-printing.
    leftMaintenance: () => maintenanceConsole.abort(),
    reboot: () => lifecycle("reboot", "rebooting", () => rebootSequence(r)),
    networkHold: opts.networking?.hold,
    signal: opts.signal,
  });
  const upgrades = upgradeRequests({
    runtime: r,
    sequences,
    checker: opts.configChecker,
    mode: () => applier.mode,
    activeConfig: () => activeConfig.get(),
    reboot: (actorId) => lifecycle("reboot", "rebooting", () => rebootSequence(r), actorId),
    signal: opts.signal,
  });

  const controllers = new ControllerRuntime(state);
  for (const c of controllersOf(parts)) controllers.register(c);
  const server = await serveMachinedApi({
    socket: paths.machinedSocket,
    context: apiContext(parts, r, applier, lifecycle, upgrades),
    replies: applier.replies,
    inMaintenance: () => applier.mode !== "normal",
    controllers,
    clock: opts.clock,
    cluster: healthDeps(
      state,
      supervisor,
      platform,
      () => state.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec,
      { apidSocket: paths.apidSocket, etcd: etcd.api },
    ),
    cosi: opts.cosi(state),
  });
  // Healthy when its API socket accepts a connection (as Talos checks machined).
  supervisor.registerSelf("machined", () => unixProbe(paths.machinedSocket));
  startEarlyServices(parts);
  await apid.openSockets();
  log.info("machined API listening", { socket: paths.machinedSocket });

  const untilStopped = () =>
    new Promise<void>((resolve) =>
      opts.signal.aborted ? resolve() : opts.signal.addEventListener("abort", () => resolve(), { once: true }),
    );
  const done = (async () => {
    try {
      controllers.start(opts.signal);
      const found = ownsDisks(r) ? findSystemDisk(opts.block) : undefined;
      const installed =
        found !== undefined &&
        (await installComplete(found.partitions.BOOT, opts.mounter, path.join(paths.system, "boot")));
      // An installed node boots once udevd has settled and it has an address. One that is not goes on to its config
      // (a download or a labelled volume waits for what it needs) and, without one, to maintenance mode, whose listener
      // then starts beside udevd's coldplug and DHCP (the links still wait for the settle) and whose banner waits for an
      // address. Talos enters maintenance only after udevd's settle, which costs seconds of CPU under emulation.
      if (installed) await opts.networking?.ready?.(state, opts.signal);
      if (found && !installed)
        log.warn("the system disk's install did not finish: it will be installed again", { disk: found.disk });
      await sequences.run("initialize", initializeSequence(r, { installed }));
      if (ownsDisks(r) && !installed) {
        // A configuration arrived in maintenance mode on a node that is not installed: install, then kexec.
        applier.installing();
        r.setStage("installing");
        try {
          await sequences.run("install", installSequence(r));
        } catch (err) {
          // The machined init starts next is in maintenance again: it says why.
          if (!opts.signal.aborted && !sequences.lifecycleRequested) recordInstallFailure(paths, err);
          throw err;
        }
        clearInstallFailure(paths);
      } else {
        if (installed) await upgrades.settleAtBoot();
        const staged = installed ? await upgrades.runStaged() : false;
        if (staged) return await untilStopped();
        r.setStage("booting");
        await applier.activate(r.configText!);
        await sequences.run("boot", bootSequence(r));
        r.setStage("running");
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
      // A boot ended by a signal runs no shutdown sequence (whose last phase stops the bus): its
      // listening socket would keep the process alive after every service finished.
      await stopDBus(r);
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

/** The supervisor of machined's services, in Talos's cgroups where there are some. */
function newSupervisor(opts: MachinedOptions): Supervisor {
  const cgroups = opts.cgroups ?? noCgroups;
  try {
    cgroups.setup(process.pid);
  } catch (err) {
    log.error("creating the cgroups failed: services run in the root group", { error: describeError(err) });
  }
  const echo = opts.echoServiceLogs
    ? (id: string, line: Buffer) => void (id !== "machined" && process.stderr.write(line))
    : undefined;
  return new Supervisor({ cgroups, logs: new ServiceLogs(echo ? { echo } : {}) });
}

/** Sends this process's log lines to their service logs; returns how to stop. */
function routeLogLines(supervisor: Supervisor): () => void {
  // machined's own log is a service log too (`talosctl logs machined`).
  const machinedLog = supervisor.logs.writer("machined");
  // The controllers' lines go to their own log, as Talos's (`talosctl logs controller-runtime`, the support bundle).
  const controllerRuntimeLog = supervisor.logs.writer("controller-runtime");
  // trustd runs in this process; its lines still go to its own log (`talosctl logs trustd`), registered by its first line.
  let trustdLog: LogWriter | undefined;
  const logOf = (component: string) =>
    component === "controller-runtime"
      ? controllerRuntimeLog
      : component === "trustd"
        ? (trustdLog ??= supervisor.logs.writer("trustd"))
        : machinedLog;
  return addLogTap((line, component) => logOf(component).write(line + "\n"));
}

/** The Events stream's bus: service changes, and every change of stage or readiness as a MachineStatusEvent. */
function machineEvents(state: ResourceState, supervisor: Supervisor, signal: AbortSignal): EventBus {
  const events = new EventBus();
  supervisor.onChange((status, event) => events.serviceState(status, event));
  // talosctl's --wait trackers follow the MachineStatusEvents.
  state.watch<MachineStatusSpec>(
    { namespace: RUNTIME_NAMESPACE, type: MachineStatusType, id: MachineStatusId },
    { signal },
    (ev) => {
      if (ev.type === "destroyed") return;
      const before = ev.old?.spec;
      const spec = ev.resource.spec;
      if (before?.stage !== spec.stage || before.status.ready !== spec.status.ready) events.machineStatus(spec);
    },
  );
  return events;
}

/** Puts an activated configuration to work before its controller publishes it. */
async function configure(p: Parts, shipper: LogShipper, bundle: ConfigBundle): Promise<void> {
  const { opts } = p;
  p.activeConfig.set(bundle);
  try {
    shipper.configure(
      (bundle.v1alpha1WithDefaults()?.machine?.logging?.destinations ?? []).map((d) => ({
        endpoint: d.endpoint ?? "",
        format: "json_lines",
        ...(d.extraTags ? { extraTags: d.extraTags } : {}),
      })),
    );
  } catch (err) {
    log.error("machine.logging.destinations not applied", { error: describeError(err) });
  }
  const udevRulesFile = path.join(opts.paths.run, "udev", "rules.d", "99-basalt.rules");
  if (opts.udevd && (await writeUdevRules(udevRulesFile, bundle.v1alpha1WithDefaults()?.machine?.udev?.rules ?? []))) {
    await reloadUdevRules(opts.udevd.udevadm).catch((err: unknown) =>
      log.error("reloading the udev rules failed", { error: describeError(err) }),
    );
  }
}

/** What the sequences' tasks act on; `waitForConfig` is maintenance mode's wait for an apply. */
function machineRuntime(p: Parts, waitForConfig: () => Promise<string>): MachineRuntime {
  const { opts, state, supervisor, apid, containerd, cri, k8s, etcd, activeConfig } = p;
  const { paths, platform } = opts;
  const setStage = (next: MachineStage) => p.stage.set(next);
  const sentEvents = platformEvents(cloudPlatform(platform.name), {
    http: fetchMetadataHttp(opts.signal),
    cmdline: opts.cmdline,
    signal: opts.signal,
    retry: eventRetry,
    log: logger("platform"),
  });
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
      await apid.start();
      await announceMaintenance(state, opts.apid.listen, p.maintenanceConsole, p.installFailure);
      return waitForConfig();
    },
    services: () => {
      // apid first: activation has usually started it already (and restarts it on feature changes).
      const machineType = activeConfig.get()?.machineType;
      const listen = opts.trustd?.listen;
      const trustd =
        listen !== undefined && isControlPlane(machineType)
          ? [trustdService({ listen, run: (signal) => runTrustd({ listen, state, signal }) })]
          : [];
      const etcdService = k8s && isControlPlane(machineType) ? [etcd.service()] : [];
      return [
        apid.service(),
        ...trustd,
        ...(containerd?.services() ?? []),
        ...(cri?.services(activeConfig.get()) ?? []),
        ...etcdService,
      ];
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
          events: p.events,
          setMetadata: (m) => p.platformMetadata.set(m),
          setNetwork: (n) => p.platformNetwork.set(n),
          platformEvent: sentEvents.fire,
        },
        wantConfig,
      ),
    platformEvent: sentEvents.fire,
    platformEventsSent: sentEvents.drained,
    mountsChanged: () => p.volumes.set(new Map(r.volumes)),
    metaChanged: () => p.metaKeys.set(r.meta?.keys() ?? new Map()),
    logind: new Logind(path.join(paths.run, "dbus", "system_bus_socket")),
    stopPods: async (action) => cri?.stopPods(action),
  };
  return r;
}

/** machined's one controller list, given what it reports to them. */
function controllersOf(p: Parts): Controller[] {
  const { opts, state, supervisor, events, cri, k8s, etcd } = p;
  const { paths, platform } = opts;
  const apidHost = splitHostPort(opts.apid.listen).host;
  const runsTrustd = (t: Parameters<typeof isControlPlane>[0]) => opts.trustd !== undefined && isControlPlane(t);
  const controllers = machinedControllers({
    sources: {
      activeConfig: p.activeConfig,
      stage: p.stage,
      volumes: p.volumes,
      metaKeys: p.metaKeys,
      platformMetadata: p.platformMetadata,
      platformNetwork: p.platformNetwork,
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
    extensions: () =>
      fs
        .readFile(path.join(paths.root, "etc", "extensions.yaml"), "utf8")
        .catch((err: NodeJS.ErrnoException) => (err.code === "ENOENT" ? undefined : Promise.reject(err))),
    time: opts.clock ? { clock: opts.clock } : {},
    etcd: etcd.controllers,
    nodeIdentity: {
      stateDir: paths.state,
      container: platform.mode === "container",
      writeMachineId: (text) => writeMachineId(path.join(paths.etc, "machine-id"), text),
    },
    ...(k8s ? { kubelet: k8s.kubelet } : {}),
    manifestApplyLock: manifestApplyLock(paths),
    ...(opts.hostDnsListen ? { hostDns: { listen: opts.hostDnsListen } } : {}),
    udevd: opts.udevd !== undefined,
    seccompProfilesDirectory: path.join(paths.root, SECCOMP_PROFILES_DIRECTORY),
  });
  return cri ? [...controllers, cri.controller] : controllers;
}

/** What the API handlers act on. */
function apiContext(
  p: Parts,
  r: MachineRuntime,
  applier: ConfigApplier,
  lifecycle: Lifecycle,
  upgrades: UpgradeRequests,
): MachineApiContext {
  const { opts, state, supervisor, containerd, cri, etcd } = p;
  return {
    platform: opts.platform,
    supervisor,
    block: opts.block,
    systemDisk: () => r.systemDisk?.disk,
    inMaintenance: () => applier.mode !== "normal",
    rbacEnabled: () => p.apid.rbacEnabled,
    activeConfig: () => state.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec,
    applyConfiguration: (req, call) => applier.apply(req, call),
    reboot: (o: RebootOptions, actorId: string) =>
      lifecycle("reboot", "rebooting", () => rebootSequence(r, o), actorId),
    shutdown: (actorId: string) => lifecycle("shutdown", "shutting down", () => shutdownSequence(r), actorId),
    reset: (o: ResetOptions, actorId: string) => lifecycle("reset", "resetting", () => resetSequence(r, o), actorId),
    upgrade: upgrades.upgrade,
    rollback: upgrades.rollback,
    events: p.events,
    containerd: containerd && ((namespace: string) => containerd.client(namespace)),
    ...(cri ? { cri: cri.access((id) => supervisor.get(id)) } : {}),
    meta: () => {
      if (!r.meta) throw new ConflictError("META is not available: the node is not installed");
      return { store: r.meta, published: () => r.metaChanged() };
    },
    etcd: etcd.api,
    packetCapture: {
      link: (name) => state.get<LinkStatusSpec>(NETWORK_NAMESPACE, LinkStatusType, name)?.spec,
      source: kernelPacketCaptureSource(),
    },
  };
}

/** Early services (Talos's earlyServices phase) besides udevd: they run in maintenance mode too. */
function startEarlyServices(p: Parts): void {
  const { opts, state, supervisor } = p;
  // Talos's "dashboard" phase, skipped with talos.dashboard.disabled=1.
  if (opts.terminals && !dashboardDisabled(opts.cmdline)) {
    const dashboard = dashboardService({
      state,
      terminals: opts.terminals,
      version: contractTag,
      apiPort: splitHostPort(opts.apid.listen).port,
      installFailure: p.installFailure,
      kernelLog: (signal) => dmesgLines(signal),
      afterUdevd: opts.udevd !== undefined,
    });
    supervisor
      .start(dashboard)
      .catch((err: unknown) => log.error("starting the dashboard failed", { error: describeError(err) }));
  }
  if (opts.syslogRelay) {
    supervisor
      .start(syslogdService({ relay: opts.syslogRelay, socket: opts.paths.syslogSocket }))
      .catch((err: unknown) => log.error("starting syslogd failed", { error: describeError(err) }));
  }
}
