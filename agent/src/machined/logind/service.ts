// What machined's sequences use of logind (Talos's DBusState): start the bus with the login1
// object on it at boot; before a shutdown, tell the kubelet and wait for it to let go; stop.

import { logger } from "../../log.js";
import type { SystemBus } from "./bus.js";
import type { LogindManager } from "./manager.js";
import { INHIBIT_DELAY_MAX_MS, LOGIND_NAME, LOGIND_PATH, MANAGER_INTERFACE } from "./names.js";

const log = logger("logind");

export type ShutdownWait = "released" | "timeout" | "aborted";

export class Logind {
  private bus: SystemBus | undefined;
  private manager: LogindManager | undefined;
  private starting: Promise<void> | undefined;

  constructor(
    private readonly socketPath: string,
    /** How long a shutdown waits for the delay locks: Talos waits as long as it advertises. */
    private readonly shutdownTimeoutMs = INHIBIT_DELAY_MAX_MS,
  ) {}

  /** Starts the bus once; a second call answers the first's outcome. */
  start(): Promise<void> {
    this.starting ??= this.listen();
    return this.starting;
  }

  private async listen(): Promise<void> {
    // dbus-next loads when the bus starts (off the boot path), not with machined.
    const [{ SystemBus }, { LogindManager }] = await Promise.all([import("./bus.js"), import("./manager.js")]);
    const manager = new LogindManager(INHIBIT_DELAY_MAX_MS);
    const bus = new SystemBus({ name: LOGIND_NAME, objects: new Map([[LOGIND_PATH, manager.handle]]) });
    await bus.listen(this.socketPath);
    this.bus = bus;
    this.manager = manager;
    log.info("system bus with login1 listening", { socket: this.socketPath });
  }

  /** Stops the bus, after a start still under way. */
  async stop(): Promise<void> {
    await this.starting?.catch(() => undefined);
    this.starting = undefined;
    this.bus?.close();
    this.bus = undefined;
    this.manager = undefined;
  }

  /**
   * Emits PrepareForShutdown(true), then waits until every shutdown delay lock is released, the
   * timeout passes or `signal` aborts; says which. Without a started bus there is no one to wait for.
   */
  async waitShutdown(signal: AbortSignal): Promise<ShutdownWait> {
    const { bus, manager } = this;
    if (!bus || !manager) return "released";
    bus.emitSignal({
      path: LOGIND_PATH,
      interface: MANAGER_INTERFACE,
      member: "PrepareForShutdown",
      signature: "b",
      body: [true],
    });
    const holders = manager.shutdownDelays().map((i) => i.who);
    if (holders.length === 0) return "released";
    log.info("waiting for the shutdown inhibitor locks", { holders, timeoutMs: this.shutdownTimeoutMs });
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const outcome = await Promise.race<ShutdownWait>([
      manager.shutdownDelaysReleased().then(() => "released" as const),
      new Promise((resolve) => (timer = setTimeout(() => resolve("timeout"), this.shutdownTimeoutMs))),
      new Promise((resolve) => {
        onAbort = () => resolve("aborted");
        if (signal.aborted) onAbort();
        else signal.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener("abort", onAbort);
    log.info(`shutdown inhibitor locks: ${outcome}`, { holders: manager.shutdownDelays().map((i) => i.who) });
    return outcome;
  }
}
