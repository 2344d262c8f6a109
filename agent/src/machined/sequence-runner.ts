import { ConflictError, describeError } from "../errors.js";
import { logger } from "../log.js";
import { runSequence, type Phase, type SequenceListener } from "./sequencer.js";

const log = logger("machined");

/** What each lifecycle sequence may take over when it is requested while another runs (reference §11). */
const preempts: Readonly<Record<string, readonly string[]>> = {
  reboot: ["boot", "initialize", "reboot"],
  reset: ["boot", "initialize"],
  shutdown: ["boot", "initialize"],
  upgrade: ["initialize"],
};

/**
 * Runs machined's sequences one at a time. A lifecycle request (reboot, shutdown, reset)
 * takes over a running sequence where Talos lets it, and is refused (Conflict) otherwise.
 */
export class SequenceRunner {
  private running: { name: string; abort: AbortController; done: Promise<void> } | undefined;
  private requested = false;

  constructor(
    private readonly listener: (actorId: string) => SequenceListener,
    private readonly stopped: AbortSignal,
    /** The reply to the call asking for a lifecycle sequence travels through apid, which the sequence stops. */
    private readonly replyGraceMs = 1000,
  ) {}

  /** True once a lifecycle sequence was accepted: it, not a failure of the sequence it took over, ends this boot. */
  get lifecycleRequested(): boolean {
    return this.requested;
  }

  /** Runs a sequence, taking over the running one when `name` may. */
  async run(name: string, phases: Phase[], actorId = ""): Promise<void> {
    const current = this.running;
    if (current) {
      this.refuseUnlessPreempts(name);
      log.info(`${name} takes over the running ${current.name} sequence`);
      current.abort.abort();
      await current.done.catch(() => undefined);
    }
    const abort = new AbortController();
    const stop = () => abort.abort();
    this.stopped.addEventListener("abort", stop, { once: true });
    const done = runSequence(name, phases, abort.signal, this.listener(actorId));
    this.running = { name, abort, done };
    try {
      await done;
    } finally {
      this.stopped.removeEventListener("abort", stop);
      if (this.running?.done === done) this.running = undefined;
    }
  }

  /**
   * Accepts a lifecycle request (or throws Conflict) and starts its sequence once the reply
   * has had `replyGraceMs` to leave; `begin` builds its phases then.
   */
  request(
    name: "reboot" | "shutdown" | "reset" | "upgrade" | "stageUpgrade",
    begin: () => Phase[],
    actorId = "",
  ): void {
    this.refuseUnlessPreempts(name);
    this.requested = true;
    setTimeout(() => {
      // begin() runs inside the chain: building the phases may throw too, and a throw in a timer ends machined.
      Promise.resolve()
        .then(() => this.run(name, begin(), actorId))
        .catch((err: unknown) => log.error(`${name} sequence failed`, { error: describeError(err) }));
    }, this.replyGraceMs);
  }

  private refuseUnlessPreempts(name: string): void {
    const current = this.running;
    if (current && !preempts[name]?.includes(current.name))
      throw new ConflictError(`the ${current.name} sequence is running`, { running: current.name, requested: name });
  }
}
