import path from "node:path";

// Every filesystem location the agent uses, rooted at "/" on a node and at a
// scratch directory in the sandbox, so no code hard-codes a node path.
export interface Paths {
  readonly root: string;
  /** Writable system tree (tmpfs on a node): sockets, runtime state. */
  readonly system: string;
  /** Where STATE is mounted; holds config.yaml. */
  readonly state: string;
  readonly configFile: string;
  readonly machinedSocket: string;
  readonly apidSocket: string;
  readonly run: string;
  readonly var: string;
  readonly etc: string;
  readonly proc: string;
  readonly sys: string;
  readonly dev: string;
  /** syslogd's datagram socket (/dev/log on a node). */
  readonly syslogSocket: string;
}

export function pathsAt(root: string): Paths {
  const at = (...p: string[]) => path.join(root, ...p);
  return {
    root,
    system: at("system"),
    state: at("system", "state"),
    configFile: at("system", "state", "config.yaml"),
    machinedSocket: at("system", "run", "machined", "machine.sock"),
    apidSocket: at("system", "run", "apid", "apid.sock"),
    run: at("run"),
    var: at("var"),
    etc: at("system", "etc"),
    proc: "/proc",
    sys: "/sys",
    dev: "/dev",
    syslogSocket: at("dev", "log"),
  };
}

export const nodePaths: Paths = pathsAt("/");
