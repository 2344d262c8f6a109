import { access, mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { ProcessRunner } from "../process-runner.js";
import { pollUntilReady } from "../readiness.js";
import type { ServiceDefinition } from "../service.js";
import { datagramFrames, parseSyslog } from "../syslog.js";

export interface SyslogdServiceOptions {
  /** The relay program (agent/native/syslog-relay.c) beside the agent's entry script. */
  relay: string;
  /** Where it listens (/dev/log on a node). */
  socket: string;
}

/**
 * syslogd as Talos's: after machined, a datagram socket any local program logs to; each
 * RFC3164/RFC5424 message becomes one JSON line of the `syslogd` log. The socket comes from a
 * small relay process (Node has no unix datagram sockets); parsing happens here.
 */
export function syslogdService(opts: SyslogdServiceOptions): ServiceDefinition {
  const listening = () => access(opts.socket);
  const runner = new ProcessRunner({
    id: "syslogd",
    command: opts.relay,
    // machined's pid: the relay dies with it (PR_SET_PDEATHSIG).
    args: [opts.socket, String(process.pid)],
    ready: (signal) => pollUntilReady(listening, signal),
    health: listening,
    decodeStdout: (output) =>
      datagramFrames((datagram) => {
        const line = parseSyslog(datagram);
        if (line !== undefined) output.write(line + "\n");
      }),
  });
  return {
    id: "syslogd",
    dependsOn: ["machined"],
    restart: "always",
    runner,
    // A socket left by an earlier run would read as ready before this one binds.
    pre: async () => {
      await mkdir(path.dirname(opts.socket), { recursive: true });
      await rm(opts.socket, { force: true });
    },
  };
}
