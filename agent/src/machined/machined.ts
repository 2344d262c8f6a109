import * as grpc from "@grpc/grpc-js";
import { promises as fs } from "node:fs";
import path from "node:path";
import { ApplyMode } from "../api/enums.js";
import { generateMaintenanceRoot, issueApiServerCert, issueMaintenanceServerCert } from "../controllers/secrets/issue.js";
import { describeError, SystemError } from "../errors.js";
import { addService } from "../grpc/server.js";
import { logger } from "../log.js";
import { spkiFingerprint } from "../pki/index.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType, MachineTypeId, MachineTypeType, type MachineConfigSpec, type MachineTypeName } from "../resources/catalog/config.js";
import { registerCatalog } from "../resources/catalog/index.js";
import { MachineStatusId, MachineStatusType, RUNTIME_NAMESPACE, ServiceType, type MachineStage, type MachineStatusSpec, type ServiceSpec } from "../resources/catalog/runtime.js";
import {
  ApiCertificatesId,
  ApiCertificatesType,
  MaintenanceRootSecretsId,
  MaintenanceRootSecretsType,
  MaintenanceServiceCertificatesId,
  MaintenanceServiceCertificatesType,
  SECRETS_NAMESPACE,
  type APICertsSpec,
  type MaintenanceRootSpec,
  type MaintenanceServiceCertsSpec,
} from "../resources/catalog/secrets.js";
import type { ResourceDefinitionInput } from "../resources/definitions.js";
import { ResourceState } from "../resources/state.js";
import { runApid } from "../apid/apid.js";
import { InProcessRunner } from "../services/inprocess-runner.js";
import { ProcessRunner, type ProcessSpec } from "../services/process-runner.js";
import { pollUntilReady, splitListen, tcpProbe } from "../services/readiness.js";
import { Supervisor } from "../services/supervisor.js";
import { readFileIfExists, writeFileAtomic } from "../sys/atomic-file.js";
import type { BlockSysfs } from "../sys/block.js";
import type { Paths } from "../sys/paths.js";
import { machinedGuard } from "./access.js";
import { machineServiceImpl, storageServiceImpl } from "./apis.js";
import { checkConfig, checkMaintenanceMode, maintenanceDryRunDetails, type ApplyRequest, type ConfigChecker, type ParsedConfig } from "./apply.js";
import { configFacts, type ConfigFacts } from "./config-facts.js";
import { maintenanceConsoleLines, reprintOnAddressChange } from "./maintenance-console.js";
import { nodeAddresses, nodeHostname } from "./node-identity.js";
import type { Platform } from "./platform.js";
import { runSequence } from "./sequencer.js";

const log = logger("machined");
const consoleLog = logger("maintenance");

/** The COSI State handlers (from grpc/cosi-server.ts), injected to keep this module testable. */
export type CosiFactory = (state: ResourceState) => Record<string, (...args: never[]) => unknown>;

export interface MachinedOptions {
  paths: Paths;
  platform: Platform;
  block: BlockSysfs;
  /** Parses and validates configurations (config module). */
  configChecker: ConfigChecker<ParsedConfig>;
  cosi: CosiFactory;
  /**
   * How to run apid: the process spec given its extra feature flags, or in
   * this process (`inProcess`: one Node runtime less, see the memory figures).
   */
  apid: { listen: string; spec(flags: string[]): ProcessSpec; inProcess?: boolean };
  /** Starts the networking controllers (DHCP on a node, observe-only in the sandbox). */
  startNetworking?: (state: ResourceState, signal: AbortSignal) => Promise<void>;
  /** Definitions other modules own (e.g. networking's), registered with the catalog. */
  extraDefinitions?: readonly ResourceDefinitionInput<never>[];
  signal: AbortSignal;
}

export interface Machined {
  state: ResourceState;
  supervisor: Supervisor;
  /** Resolves when machined has stopped. */
  done: Promise<void>;
}

const owners = {
  config: "config.MachineConfigController",
  machineType: "config.MachineTypeController",
  maintenanceRoot: "secrets.MaintenanceRootController",
  maintenanceCerts: "secrets.MaintenanceCertSANsController",
  apiCerts: "secrets.APIController",
  services: "v1alpha1.ServiceController",
  machineStatus: "runtime.MachineStatusController",
};

/**
 * machined: owns the resource store, serves the node API on its unix socket,
 * runs the boot sequence (config → maintenance when none → normal mode) and
 * supervises apid.
 */
export async function startMachined(opts: MachinedOptions): Promise<Machined> {
  const { paths, platform } = opts;
  const state = new ResourceState();
  registerCatalog(state, opts.extraDefinitions ?? []);

  const supervisor = new Supervisor();
  supervisor.onChange((s) => {
    const spec: ServiceSpec = { running: s.state === "Running", healthy: s.health.healthy, unknown: s.health.unknown };
    state.modify<ServiceSpec>(RUNTIME_NAMESPACE, ServiceType, s.id, owners.services, () => spec);
  });
  supervisor.registerSelf("machined");

  let mode: "maintenance" | "normal" = "maintenance";
  let facts: ConfigFacts | undefined;
  // Settled once the first complete config sent in maintenance has been applied; created up
  // front so an apply that races the end of the maintenance setup is not lost.
  let configArrived: (applied: Promise<void>) => void = () => undefined;
  const appliedConfig = new Promise<void>((resolve, reject) => {
    configArrived = resolve;
    opts.signal.addEventListener("abort", () => reject(new SystemError("stopped while waiting for a configuration")), { once: true });
  });
  appliedConfig.catch(() => undefined);
  // Maintenance applies are handled one at a time, and each queues its application in
  // arrival order, so the stored file and the active config end up the same config.
  let maintenanceLock: Promise<unknown> = Promise.resolve();
  let handedOver = false;

  const setStage = (stage: MachineStage, ready: boolean) =>
    state.modify<MachineStatusSpec>(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId, owners.machineStatus, () => ({
      stage,
      status: { ready, unmetConditions: [] },
    }));
  setStage("booting", false);

  const applyConfiguration = async (req: ApplyRequest): Promise<Record<string, unknown>> => {
    const reqMode = req.mode ?? ApplyMode.REBOOT;
    const data = Buffer.from(req.data ?? Buffer.alloc(0));
    if (mode === "maintenance") {
      checkMaintenanceMode(reqMode);
      const run = maintenanceLock.then(async () => {
        const { config, warnings } = checkConfig(opts.configChecker, data);
        if (req.dry_run) return { warnings, mode: reqMode, mode_details: maintenanceDryRunDetails };
        await writeFileAtomic(paths.configFile, data);
        log.info("configuration received in maintenance mode and stored", { file: paths.configFile });
        const text = data.toString("utf8");
        if (handedOver) {
          // Sent while the first complete config is being applied: applied right after it.
          enterNormal(text, { afterReply: true }).catch((err: unknown) => log.error("applying a configuration failed", { error: describeError(err) }));
        } else if (config.completeForBoot) {
          // A config without a v1alpha1 document is kept but does not end maintenance (reference §2).
          handedOver = true;
          configArrived(enterNormal(text, { afterReply: true }));
        }
        return { warnings };
      });
      maintenanceLock = run.catch(() => undefined);
      return run;
    }
    const { warnings } = checkConfig(opts.configChecker, data);
    if (req.dry_run) {
      const current = (await readFileIfExists(paths.configFile))?.toString("utf8");
      const what = reqMode === ApplyMode.STAGED ? "Staged configuration to be applied after a reboot" : "Applied configuration without a reboot";
      const diff = current === data.toString("utf8") ? "No changes." : "The configuration differs from the current one.";
      return { warnings, mode: reqMode, mode_details: `Dry run summary:\n${what} (skipped in dry-run).\n\nConfig diff:\n\n${diff}` };
    }
    await writeFileAtomic(paths.configFile, data);
    if (reqMode === ApplyMode.STAGED) {
      return { warnings, mode: reqMode, mode_details: "Staged configuration to be applied after a reboot" };
    }
    await enterNormal(data.toString("utf8"));
    // Rebooting to apply is a later issue: every accepted mode applies in place for now.
    return { warnings, mode: reqMode, mode_details: "Applied configuration without a reboot" };
  };

  const server = new grpc.Server({ "grpc.max_receive_message_length": 32 * 1024 * 1024, "grpc.max_send_message_length": 32 * 1024 * 1024 });
  const guard = machinedGuard(() => mode === "maintenance");
  const ctx = {
    platform,
    supervisor,
    block: opts.block,
    inMaintenance: () => mode === "maintenance",
    rbacEnabled: () => facts?.rbac ?? true,
    activeConfig: () => state.get<MachineConfigSpec>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec,
    applyConfiguration,
  };
  addService(server, "machine.MachineService", machineServiceImpl(ctx), guard);
  addService(server, "storage.StorageService", storageServiceImpl(ctx), guard);
  for (const name of ["time.TimeService", "cluster.ClusterService", "inspect.InspectService", "securityapi.SecurityService"]) {
    addService(server, name, {}, guard);
  }
  addService(server, "cosi.resource.State", opts.cosi(state) as never, guard);
  await listenUnix(server, paths.machinedSocket);
  log.info("machined API listening", { socket: paths.machinedSocket });

  const apidService = (features: ConfigFacts | undefined) => {
    // apid is ready, and healthy, when its TCP listener accepts connections; it binds once its
    // certificate is published, however long that (or a loaded host) takes.
    const health = () => tcpProbe(opts.apid.listen, "apid");
    const ready = (signal: AbortSignal) => pollUntilReady(health, signal);
    const runner = opts.apid.inProcess
      ? new InProcessRunner({
          id: "apid",
          run: (signal) =>
            runApid({
              listen: opts.apid.listen,
              machinedSocket: paths.machinedSocket,
              enableRbac: features?.rbac ?? true,
              checkExtKeyUsage: features?.apidCheckExtKeyUsage ?? false,
              signal,
            }),
          ready,
          health,
        })
      : // Running once its listener accepts connections (it binds as soon as its certificate is published).
        new ProcessRunner({ ...opts.apid.spec(features ? apidFlags(features) : []), ready, health });
    return { id: "apid", restart: "always" as const, runner };
  };

  const publishMaintenance = async () => {
    const root = await generateMaintenanceRoot();
    state.modify<MaintenanceRootSpec>(SECRETS_NAMESPACE, MaintenanceRootSecretsType, MaintenanceRootSecretsId, owners.maintenanceRoot, () => ({ ca: root }));
    const { host: listenHost, port } = splitListen(opts.apid.listen);
    // A listener bound to one address (the sandbox) is reachable only there.
    const reachableNow = () => (["", "0.0.0.0", "::"].includes(listenHost) ? nodeAddresses(state) : [listenHost]);
    const addresses = nodeAddresses(state);
    const reachable = reachableNow();
    const server = await issueMaintenanceServerCert(root, { addresses: [...new Set([...addresses, ...reachable])], hostname: nodeHostname(state).hostname });
    // The CA's key stays in MaintenanceRootSecrets; only its certificate is handed on.
    state.modify<MaintenanceServiceCertsSpec>(SECRETS_NAMESPACE, MaintenanceServiceCertificatesType, MaintenanceServiceCertificatesId, owners.maintenanceCerts, () => ({
      ca: { crt: root.crt, key: "" },
      server,
    }));
    const fingerprint = spkiFingerprint(server.crt);
    for (const line of maintenanceConsoleLines({ addresses: reachable, port, fingerprint })) consoleLog.info(line);
    // Addresses that arrive later (the DHCPv4 lease after IPv6 SLAAC) are printed again, until a config is applied.
    reprintOnAddressChange(state, maintenanceConsole.signal, {
      printed: reachable,
      reachable: reachableNow,
      print: (now) => {
        for (const line of maintenanceConsoleLines({ addresses: now, port, fingerprint })) consoleLog.info(line);
      },
    });
  };
  const maintenanceConsole = new AbortController();
  opts.signal.addEventListener("abort", () => maintenanceConsole.abort(), { once: true });

  let renewTimer: NodeJS.Timeout | undefined;
  /** Publishes apid's API certificates; false when they could not be issued. */
  const publishApiCerts = async (next: ConfigFacts): Promise<boolean> => {
    const { hostname: fallbackHost, fqdn } = nodeHostname(state);
    try {
      const serverCert = await issueApiServerCert(next.osCA, {
        addresses: nodeAddresses(state),
        certSANs: next.certSANs,
        hostname: next.hostname ?? fallbackHost,
        fqdn: next.hostname ?? fqdn,
      });
      state.modify<APICertsSpec>(SECRETS_NAMESPACE, ApiCertificatesType, ApiCertificatesId, owners.apiCerts, () => ({
        server: serverCert,
        acceptedCAs: [next.osCA.crt, ...next.acceptedCAs].map((crt) => ({ crt })),
      }));
      return true;
    } catch (err) {
      // Workers get theirs from trustd (a later issue); apid then has nothing to serve with.
      log.error("issuing the API certificate failed", { error: describeError(err) });
      return false;
    }
  };

  // Applies run one at a time: each may restart apid and re-issue certificates.
  let applying = Promise.resolve();
  // afterReply: applying may restart apid, which carries the reply to the apply that sent
  // `text`; let that reply leave first.
  const enterNormal = (text: string, opts: { afterReply?: boolean } = {}): Promise<void> => {
    const run = applying.then(async () => {
      if (opts.afterReply) await new Promise((resolve) => setImmediate(resolve));
      await applyConfigText(text);
    });
    applying = run.catch(() => undefined);
    return run;
  };
  const applyConfigText = async (text: string) => {
    const next = configFacts(text);
    const rbacChanged = facts === undefined || facts.rbac !== next.rbac || facts.apidCheckExtKeyUsage !== next.apidCheckExtKeyUsage;
    facts = next;
    state.modify<MachineConfigSpec>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active, owners.config, () => text);
    state.modify<MachineTypeName>(CONFIG_NAMESPACE, MachineTypeType, MachineTypeId, owners.machineType, () => next.machineType);
    const certsPublished = await publishApiCerts(next);
    if (!renewTimer) {
      // Talos re-issues the 24 h API certificate every 12 h.
      renewTimer = setInterval(() => void (facts && publishApiCerts(facts)), 12 * 3600_000);
      renewTimer.unref();
      opts.signal.addEventListener("abort", () => clearInterval(renewTimer), { once: true });
    }
    if (mode === "maintenance") {
      mode = "normal";
      maintenanceConsole.abort();
      const maintenanceSecrets = [
        [MaintenanceServiceCertificatesType, MaintenanceServiceCertificatesId, owners.maintenanceCerts],
        [MaintenanceRootSecretsType, MaintenanceRootSecretsId, owners.maintenanceRoot],
      ] as const;
      for (const [type, id, owner] of maintenanceSecrets) {
        if (state.get(SECRETS_NAMESPACE, type, id)) state.destroy(SECRETS_NAMESPACE, type, id, { owner });
      }
    }
    if (rbacChanged) {
      // apid takes its features as flags (as Talos starts it with them); restart it to apply.
      await supervisor.stop("apid", "machine.features changed (apid takes them as flags)");
      const started = supervisor.start(apidService(next));
      // Without certificates apid waits (Preparing) for them; applying must not wait with it.
      if (certsPublished || state.get(SECRETS_NAMESPACE, ApiCertificatesType, ApiCertificatesId)) await started;
      else started.catch((err: unknown) => log.error("starting apid failed", { error: describeError(err) }));
    }
  };

  const done = (async () => {
    try {
      await runSequence("initialize", [
        { name: "config", tasks: [{ name: "loadConfig", run: async () => undefined }] },
      ], opts.signal);
      if (opts.startNetworking) await opts.startNetworking(state, opts.signal);
      const stored = await readFileIfExists(paths.configFile);
      let text: string | undefined;
      if (stored) {
        try {
          if (checkConfig(opts.configChecker, stored).config.completeForBoot) text = stored.toString("utf8");
          log.info("loaded stored configuration", { file: paths.configFile });
        } catch (err) {
          log.error("stored configuration is not usable; entering maintenance", { error: describeError(err) });
        }
      }
      if (text === undefined) {
        setStage("maintenance", false);
        await publishMaintenance();
        await supervisor.start(apidService(undefined));
        await appliedConfig;
        // Install to disk is a later issue: on metal we persist and leave maintenance without installing.
        if (platform.mode === "metal") log.warn("install to disk is not implemented yet: booting from the stored configuration without installing");
        setStage("booting", false);
      } else {
        setStage("booting", false);
        await enterNormal(text);
      }
      await runSequence("boot", [{ name: "startEverything", tasks: [{ name: "startAllServices", run: async () => undefined }] }], opts.signal);
      setStage("running", true);
      log.info("node is ready for user interaction");
      await new Promise<void>((resolve) => (opts.signal.aborted ? resolve() : opts.signal.addEventListener("abort", () => resolve(), { once: true })));
    } catch (err) {
      if (!opts.signal.aborted) throw err;
    } finally {
      await supervisor.stopAll();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await fs.rm(paths.machinedSocket, { force: true });
    }
  })();
  return { state, supervisor, done };
}

function apidFlags(f: ConfigFacts): string[] {
  return [`--enable-rbac=${f.rbac}`, `--check-ext-key-usage=${f.apidCheckExtKeyUsage}`];
}

async function listenUnix(server: grpc.Server, socket: string): Promise<void> {
  await fs.mkdir(path.dirname(socket), { recursive: true, mode: 0o771 });
  await fs.rm(socket, { force: true });
  await new Promise<void>((resolve, reject) => server.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
}

