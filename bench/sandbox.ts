// What the sandbox benches (memory.ts, rpc-latency.ts) share: which agent
// build they run (dist/ or the esbuild bundle with --bundle), machined's node
// flags and environment as init sets them, and starting/stopping the sandbox.
// Port and retry functions, and the process handling itself, are the
// integration tests' (test/integration/helpers/sandbox.ts).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { agentEnv, agentNodeFlags } from "../agent/src/cmd/machined-run.js";
import {
  eventually as retry,
  freePort,
  startSandbox as startSandboxProcess,
  type SandboxProcess,
} from "../test/integration/helpers/sandbox.js";

export { freePort };

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Retries `fn` every 200 ms, 150 times: a loaded shared host starts the sandbox slowly. */
export const eventually = <T>(fn: () => Promise<T>): Promise<T> => retry(fn, 150);

/** --bundle: run the esbuild bundle (as in the image) instead of dist/. */
export const useBundle = process.argv.includes("--bundle");

// machined is started as init starts it on a node: with the agent's node flags and environment.
export const nodeFlags: string[] =
  process.env["BENCH_NODE_FLAGS"] !== undefined
    ? process.env["BENCH_NODE_FLAGS"].split(/\s+/).filter(Boolean)
    : [...agentNodeFlags];
export const sandboxEnv: NodeJS.ProcessEnv = { ...agentEnv, ...process.env, BASALT_LOG_LEVEL: "warn" };

/**
 * The script (and subcommand) to run: dist's sandbox.js, or with --bundle
 * $BENCH_BUNDLE or _out/bundle/basalt.mjs, made by scripts/bundle.mjs when missing.
 */
export function entry(): string[] {
  if (!useBundle) return [path.join(repo, "dist/agent/src/cmd/sandbox.js")];
  const bundle = process.env["BENCH_BUNDLE"]
    ? path.resolve(process.env["BENCH_BUNDLE"])
    : path.join(repo, "_out/bundle/basalt.mjs");
  if (!existsSync(bundle))
    spawnSync(process.execPath, [path.join(repo, "scripts/bundle.mjs"), path.dirname(bundle)], { stdio: "inherit" });
  return [bundle, "sandbox"];
}

/** The sandbox on 127.0.0.1:<port>; an exit before stop() is reported on stderr with its last output. */
export function startSandbox(stateDir: string, port: number, inProcess: boolean): SandboxProcess {
  const sandbox = startSandboxProcess(stateDir, port, inProcess ? ["--apid-in-process"] : [], {
    nodeArgs: [...nodeFlags, ...entry()],
    env: sandboxEnv,
  });
  let stopping = false;
  sandbox.child.once("exit", (code, signal) => {
    if (!stopping)
      process.stderr.write(`sandbox exited early (${code ?? signal}):\n${sandbox.output().slice(-4000)}\n`);
  });
  return {
    ...sandbox,
    stop(graceMs?: number) {
      stopping = true;
      return sandbox.stop(graceMs);
    },
  };
}
