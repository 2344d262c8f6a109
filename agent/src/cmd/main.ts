#!/usr/bin/env node
// One entry point for every process, chosen by the first argument (as a
// multi-call binary): the image ships a single bundle.
import { describeError } from "../errors.js";
import { installCrashReport } from "./crash-report.js";

const commands: Record<string, () => Promise<{ main(argv: string[]): Promise<void> }>> = {
  machined: () => import("./machined.js"),
  apid: () => import("./apid.js"),
  trustd: () => import("./trustd.js"),
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
load()
  .then((m) => m.main(rest))
  .catch((err: unknown) => {
    process.stderr.write(`basalt ${name}: ${describeError(err)}\n`);
    process.exit(1);
  });
