import { spawn, type ChildProcess } from "node:child_process";
import { BasaltError, describeError } from "../errors.js";
import { logger } from "../log.js";
import type { LogWriter } from "./logs.js";
import { exitText, quotedArgs, startErrorText } from "./process-outcome.js";
import type { RunContext, ServiceRunner } from "./service.js";

export interface ProcessSpec {
  id: string;
  command: string;
  /** The name the program sees itself run as (multi-call programs: udevadm as systemd-udevd). */
  argv0?: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** Resolves once the process is ready to serve (e.g. its socket answers). */
  ready?: (signal: AbortSignal) => Promise<void>;
  health?: () => Promise<void>;
  stopTimeoutMs?: number;
  /** Open an IPC channel: the child sees it close when we die, and can exit instead of lingering. */
  ipc?: boolean;
  /** Run as this unprivileged user (e.g. trustd as 51, as Talos); needs us to be root. */
  user?: { uid: number; gid: number };
  /** Turns what the process writes on stdout into log lines (syslogd's framed datagrams); unset: the bytes as they come. */
  decodeStdout?: (output: LogWriter) => (chunk: Buffer) => void;
}

/** The program could not be run at all (missing, not executable): no process exists. */
export class ProcessStartError extends BasaltError {}

/** The process ended (exited non-zero or by a signal), worded as Go's ProcessState. */
export class ProcessExitError extends BasaltError {}

/**
 * Runs a service as a child process: its stdout and stderr go to the service's log, and the
 * process into the service's cgroup (from the supervisor's RunContext).
 */
export class ProcessRunner implements ServiceRunner {
  private child: ChildProcess | undefined;
  private readonly log;
  readonly health?: () => Promise<void>;

  constructor(private readonly spec: ProcessSpec) {
    this.log = logger(spec.id);
    if (spec.health) this.health = spec.health;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(onExit: (err: Error | undefined) => void, ctx?: RunContext): Promise<string> {
    // Without a supervisor's context (a caller of its own), the output joins ours.
    const out = ctx ? "pipe" : "inherit";
    const child = spawn(this.spec.command, this.spec.args, {
      env: this.spec.env ?? process.env,
      ...(this.spec.argv0 ? { argv0: this.spec.argv0 } : {}),
      ...(this.spec.user ? { uid: this.spec.user.uid, gid: this.spec.user.gid } : {}),
      stdio: this.spec.ipc ? ["ignore", out, out, "ipc"] : ["ignore", out, out],
    });
    this.child = child;
    // After start too (a failed kill): 'error' may come more than once, and once() would leave the next unheard.
    child.on("error", (err) => this.log.warn("process error", { pid: child.pid, error: describeError(err) }));
    // A program that cannot be run (missing, not executable) has no process: that is a failed start, never Running.
    try {
      await new Promise<void>((resolve, reject) => {
        child.once("spawn", resolve);
        child.once("error", reject);
      });
    } catch (err) {
      if (this.child === child) this.child = undefined;
      const errno = err as NodeJS.ErrnoException; // spawn's 'error' is always a system error
      // Go's text only: Node's own message ("spawn /x ENOENT") would repeat it in the event.
      throw new ProcessStartError(`error starting process: ${startErrorText(this.spec.command, errno)}`, {
        command: this.spec.command,
        code: errno.code,
      });
    }
    if (ctx && child.pid !== undefined) ctx.placeProcess(child.pid);
    if (ctx) {
      for (const stream of [child.stdout, child.stderr]) {
        const output = ctx.openOutput();
        const decode =
          stream === child.stdout && this.spec.decodeStdout
            ? this.spec.decodeStdout(output)
            : (chunk: Buffer) => output.write(chunk);
        stream?.on("data", decode);
        stream?.once("end", () => output.flush());
        // A pipe read error is the output's loss, not a reason to end machined (unheard, 'error' throws).
        stream?.on("error", (err) => this.log.warn("reading the process output failed", { error: describeError(err) }));
      }
    }
    const ac = new AbortController();
    const exited = new Promise<never>((_, reject) => {
      child.once("exit", (code, signal) =>
        reject(new ProcessExitError(exitText(code, signal), { id: this.spec.id, code, signal })),
      );
    });
    exited.catch(() => undefined);
    try {
      if (this.spec.ready) await Promise.race([this.spec.ready(ac.signal), exited]);
    } catch (err) {
      // A failed start leaves nothing to stop: stop() would wait for an exit already seen (or never coming).
      if (this.child === child) this.child = undefined;
      child.kill("SIGKILL");
      throw err;
    } finally {
      ac.abort();
    }
    child.once("exit", (code, signal) => {
      if (this.child !== child) return;
      this.child = undefined;
      onExit(code === 0 ? undefined : new ProcessExitError(exitText(code, signal), { id: this.spec.id, code, signal }));
    });
    this.log.debug("process started", { pid: child.pid });
    return `Process ${this.describe()} started with PID ${child.pid}`;
  }

  /** As Talos names a process runner: Process(["/path" "arg" ...]). */
  describe(): string {
    return `Process(${quotedArgs([this.spec.command, ...this.spec.args])})`;
  }

  async stop(): Promise<void> {
    const child = this.child;
    // Exited (by a signal: exitCode stays null) or never spawned: no exit event will come.
    if (!child || child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    this.child = undefined;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => child.kill("SIGKILL"), this.spec.stopTimeoutMs ?? 10_000);
      child.once("exit", () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill("SIGTERM");
    });
  }
}
