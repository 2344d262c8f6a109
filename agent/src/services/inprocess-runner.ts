import { describeError, SystemError } from "../errors.js";
import type { RunContext, ServiceRunner } from "./service.js";

/**
 * Runs a service as an async task inside this process (same supervision,
 * states and health as a child process, one Node runtime less in memory).
 */
export class InProcessRunner implements ServiceRunner {
  private ac: AbortController | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly spec: {
      id: string;
      /** Runs until `signal` aborts; rejecting means the service failed. */
      run(signal: AbortSignal): Promise<void>;
      ready?: (signal: AbortSignal) => Promise<void>;
      health?: () => Promise<void>;
    },
  ) {
    if (spec.health) this.health = spec.health;
  }

  readonly health?: () => Promise<void>;

  async start(onExit: (err: Error | undefined) => void, ctx?: RunContext): Promise<string> {
    // Every service has a log, as Talos's goroutine runner opens one at start; a failed run is its last line.
    const output = ctx?.openOutput();
    const ac = new AbortController();
    this.ac = ac;
    let failed: ((err: unknown) => void) | undefined;
    const failedEarly = new Promise<never>((_, reject) => (failed = reject));
    failedEarly.catch(() => undefined);
    // Set when the run ends; an end before start resolved is start's failure, not an exit to report too.
    let ended: Error | undefined;
    let started = false;
    const end = (err: Error) => {
      ended = err;
      failed?.(err); // also ends a readiness wait
    };
    this.running = this.spec.run(ac.signal).then(
      () => {
        end(new SystemError(`${this.spec.id} exited during start`));
        if (this.ac === ac && started) onExit(undefined);
      },
      (err: unknown) => {
        end(new SystemError(`${this.spec.id} failed`, {}, { cause: err }));
        output?.write(`${describeError(ended)}\n`);
        if (this.ac === ac && started) onExit(ended);
      },
    );
    if (this.spec.ready) {
      const readyAc = new AbortController();
      try {
        await Promise.race([this.spec.ready(readyAc.signal), failedEarly]);
      } catch (err) {
        this.ac = undefined;
        ac.abort();
        throw err;
      } finally {
        readyAc.abort();
      }
    }
    if (ended) {
      this.ac = undefined;
      throw ended;
    }
    started = true;
    return "Service started as goroutine";
  }

  /** As Talos names its goroutine runner. */
  describe(): string {
    return `Goroutine(${JSON.stringify(this.spec.id)})`;
  }

  async stop(): Promise<void> {
    const ac = this.ac;
    this.ac = undefined;
    ac?.abort();
    await this.running?.catch(() => undefined);
  }
}
