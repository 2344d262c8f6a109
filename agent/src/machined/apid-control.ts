import { promises as fs } from "node:fs";
import path from "node:path";
import { runApid } from "../apid/apid.js";
import type { ConfigBundle } from "../config/bundle.js";
import { describeError } from "../errors.js";
import { stateFeed } from "../grpc/resource-watch.js";
import { logger } from "../log.js";
import { ApiCertificatesId, ApiCertificatesType, SECRETS_NAMESPACE } from "../resources/catalog/secrets.js";
import type { ResourceState } from "../resources/state.js";
import { apidService } from "../services/definitions/apid.js";
import type { ProcessSpec } from "../services/process-runner.js";
import type { ServiceDefinition } from "../services/service.js";
import type { Supervisor } from "../services/supervisor.js";
import type { Paths } from "../sys/paths.js";

const log = logger("machined");

/** How to run apid: as its own process (the spec given its feature flags), or in machined's. */
export interface ApidLaunch {
  listen: string;
  spec(flags: string[], environment: string[]): ProcessSpec;
  /** In this process: one Node runtime less (see the memory figures in docs/performance.md). */
  inProcess?: boolean;
  /** The unprivileged user apid's process runs as. */
  user?: { uid: number; gid: number };
}

export interface ApidControlOptions {
  launch: ApidLaunch;
  paths: Paths;
  state: ResourceState;
  supervisor: Supervisor;
  /** The environment apid's process gets (the kernel's and the configuration's). */
  environment(): string[];
  /** True while the node waits for a configuration in maintenance mode. */
  inMaintenance(): boolean;
}

/**
 * apid's start and restarts. apid takes its features (RBAC, the client certificates' extended
 * key usage check) as flags, as Talos starts it with them: a configuration that changes them
 * restarts it, and so does leaving maintenance mode, whose API runs in machined's own process.
 */
export class ApidControl {
  private rbac = true;
  private checkExtKeyUsage = false;

  constructor(private readonly opts: ApidControlOptions) {}

  /** Whether the API authorizes calls by role (`.machine.features.rbac`). */
  get rbacEnabled(): boolean {
    return this.rbac;
  }

  /** apid's service, built for the node's mode and features as they are now. */
  service(): ServiceDefinition {
    const { launch, paths, state } = this.opts;
    const rbac = this.rbac;
    const checkExtKeyUsage = this.checkExtKeyUsage;
    const maintenance = this.opts.inMaintenance();
    // In maintenance mode the API is served from machined's own process, as Talos's maintenance service
    // runs inside machined: the node answers without starting a second Node runtime first and idles in
    // one process. A configuration brings apid up as its own process.
    const run =
      launch.inProcess || maintenance
        ? {
            inProcess: (signal: AbortSignal) =>
              runApid({
                listen: launch.listen,
                machinedSocket: paths.machinedSocket,
                apidSocket: paths.apidSocket,
                enableRbac: rbac,
                checkExtKeyUsage,
                resources: stateFeed(state),
                signal,
              }),
          }
        : {
            process: launch.spec(
              [`--enable-rbac=${rbac}`, `--check-ext-key-usage=${checkExtKeyUsage}`],
              this.opts.environment(),
            ),
          };
    return apidService({ state, listen: launch.listen, maintenance, run });
  }

  /** Starts apid (maintenance mode's API, or the boot's services). */
  start(): Promise<void> {
    return this.opts.supervisor.start(this.service());
  }

  /** Takes `bundle`'s apid features; true when apid must restart for them (or to leave maintenance mode). */
  takeFeatures(bundle: ConfigBundle, leavingMaintenance: boolean): boolean {
    const features = bundle.v1alpha1WithDefaults()?.machine?.features;
    const nextRbac = features?.rbac !== false;
    const nextExtKeyUsage = features?.apidCheckExtKeyUsage === true;
    const restart = leavingMaintenance || nextRbac !== this.rbac || nextExtKeyUsage !== this.checkExtKeyUsage;
    this.rbac = nextRbac;
    this.checkExtKeyUsage = nextExtKeyUsage;
    return restart;
  }

  /** Restarts apid with the features taken last. */
  async restart(): Promise<void> {
    const { supervisor, state } = this.opts;
    await supervisor.stop("apid", "machine.features changed (apid takes them as flags)");
    const started = supervisor.start(this.service());
    // Without certificates apid waits (Preparing) for them; activating must not wait with it.
    if (state.get(SECRETS_NAMESPACE, ApiCertificatesType, ApiCertificatesId)) await started;
    else started.catch((err: unknown) => log.error("starting apid failed", { error: describeError(err) }));
  }

  /**
   * apid runs unprivileged (uid/gid 50, as on Talos): machined's socket is its to connect to (the
   * directory 0771, the socket owned by apid's user), and apid's own socket directory is apid's.
   */
  async openSockets(): Promise<void> {
    const { launch, paths } = this.opts;
    if (!launch.user || launch.inProcess) return;
    const { uid, gid } = launch.user;
    await fs.chmod(path.dirname(paths.machinedSocket), 0o771);
    await fs.chown(paths.machinedSocket, uid, gid);
    await fs.mkdir(path.dirname(paths.apidSocket), { recursive: true, mode: 0o750 });
    await fs.chown(path.dirname(paths.apidSocket), uid, gid);
  }
}
