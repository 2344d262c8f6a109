#!/usr/bin/env node
// One entry point for every process, chosen by the first argument (as a
// multi-call binary): the image ships a single bundle.
import { describeError } from "../errors.js";
import { setFlagsFromString } from "node:v8";
import { installCrashReport } from "./crash-report.js";
import { seedCompileCache } from "./compile-cache.js";

const commands: Record<string, () => Promise<{ main(argv: string[]): Promise<void> }>> = {
  machined: () => import("./machined.js"),
  apid: () => import("./apid.js"),
  sandbox: () => import("./sandbox.js"),
  ctl: () => import("./ctl.js"),
};

const [name = "", ...rest] = process.argv.slice(2);
const load = commands[name];
if (!load) {
  process.stderr.write(`usage: basalt {${Object.keys(commands).join("|")}} [args...]\n`);
  process.exit(2);
}
installCrashReport(name);
// Beside the bundle on a node: the code cache of its chunks, for the command's modules about to load.
seedCompileCache(new URL("./compile-cache/", import.meta.url));
load()
  .then((m) => {
    applyStartedV8Flags();
    return m.main(rest);
  })
  .catch((err: unknown) => {
    process.stderr.write(`basalt ${name}: ${describeError(err)}\n`);
    process.exit(1);
  });

/**
 * BASALT_V8_FLAGS (init sets `--optimize-for-size` for machined) are V8 flags applied once the command's
 * modules are loaded instead of on node's command line: any V8 flag there changes V8's flag hash, so Node
 * refuses the code cache built into it for its own modules and compiles every one the agent loads at start
 * again (seconds under emulation). Set this late, `--optimize-for-size` still gives machined the same idle
 * memory.
 */
function applyStartedV8Flags(): void {
  const flags = process.env["BASALT_V8_FLAGS"];
  if (!flags) return;
  setFlagsFromString(flags);
  // Not inherited: machined hands apid its own (apidFlags).
  delete process.env["BASALT_V8_FLAGS"];
}
