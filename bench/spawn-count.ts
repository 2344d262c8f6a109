// Preloaded into the agent by bench/network.ts (`node --import`): records every
// process the agent starts through node:child_process, one JSON line each in
// $BASALT_BENCH_SPAWN_LOG: the command and whether networking code
// (controllers/network, network/, sys/net*, cmd/networking) is on the caller's stack.
// The first line is the process's own start time (performance.timeOrigin).
import { appendFileSync } from "node:fs";
import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import { performance } from "node:perf_hooks";

const log = process.env["BASALT_BENCH_SPAWN_LOG"];
const networkingFrame = /agent\/src\/(controllers\/network\/|network\/|cmd\/networking\.js|sys\/net[^/]*\.js)/;

if (log) {
  appendFileSync(log, JSON.stringify({ processStart: performance.timeOrigin }) + "\n");
  // exec calls execFile through the module's exports: count the outermost call only.
  let depth = 0;
  const names = ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"] as const;
  for (const name of names) {
    // The module's own functions, kept to call through; their overloads are not needed to forward arguments.
    const original = childProcess[name] as unknown as (...args: unknown[]) => unknown;
    const wrapped = function (this: unknown, ...args: unknown[]): unknown {
      if (depth === 0) {
        const stack = new Error().stack ?? "";
        appendFileSync(
          log,
          JSON.stringify({
            fn: name,
            command: String(args[0]),
            networking: networkingFrame.test(stack),
            at: Date.now(),
          }) + "\n",
        );
      }
      depth++;
      try {
        return original.apply(this, args);
      } finally {
        depth--;
      }
    };
    // Replacing a builtin's export in place is what syncBuiltinESMExports publishes to ES importers.
    (childProcess as unknown as Record<string, unknown>)[name] = wrapped;
  }
  syncBuiltinESMExports();
}
