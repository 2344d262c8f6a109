// Shared by the integration tests that run the sandbox (machined + apid) as a
// child process: a free loopback port, retry-until-ready, and a child that is
// always stopped, even when a test fails or the runner exits early.
import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

const sandboxJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../agent/src/cmd/sandbox.js");

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Retries `fn` until it succeeds: processes start asynchronously (bounded by attempts, not by timing asserts). */
export async function eventually<T>(fn: () => Promise<T>, attempts = 100): Promise<T> {
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await fn();
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw last;
}

export interface SandboxProcess {
  child: ChildProcess;
  /** Everything the sandbox printed so far (stdout and stderr). */
  output(): string;
  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`; resolves once it is gone. */
  stop(graceMs?: number): Promise<void>;
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** SIGTERM, then SIGKILL if `child` has not exited after `graceMs`; resolves once it is gone. */
export async function stopProcess(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (exited(child)) return;
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await gone;
  clearTimeout(timer);
}

/** How the sandbox process is launched; the benches run it as init runs machined. */
export interface SandboxLaunch {
  /** node's arguments before the sandbox's own: node flags, then the entry script (and its subcommand). Default: dist's sandbox.js. */
  nodeArgs?: string[];
  /** The whole environment of the sandbox. Default: this process's, at log level info. */
  env?: NodeJS.ProcessEnv;
}

/** Starts `basalt sandbox` on `127.0.0.1:<port>` with its state under `stateDir`. */
export function startSandbox(
  stateDir: string,
  port: number,
  extraArgs: string[] = [],
  launch: SandboxLaunch = {},
): SandboxProcess {
  let out = "";
  const nodeArgs = launch.nodeArgs ?? [sandboxJs];
  const child = spawn(
    process.execPath,
    [...nodeArgs, "--state-dir", stateDir, "--apid-listen", `127.0.0.1:${port}`, ...extraArgs],
    {
      stdio: ["ignore", "pipe", "pipe"],
      env: launch.env ?? { ...process.env, BASALT_LOG_LEVEL: "info" },
    },
  );
  child.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  child.stderr!.on("data", (b: Buffer) => (out += b.toString()));
  // If the test process goes away first (a crash, a cancelled run), do not leave the sandbox behind.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  void gone.then(() => process.removeListener("exit", killOnExit));
  return {
    child,
    output: () => out,
    stop: (graceMs = 10_000) => stopProcess(child, graceMs),
  };
}
