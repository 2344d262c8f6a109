import { NetworkChangeHold, networkControllers } from "../controllers/network/index.js";
import { Dhcp6OperatorController } from "../controllers/network/dhcp6-operator.js";
import { waitForNodeAddress } from "../machined/node-identity.js";
import { devicesReady } from "../machined/devices-ready.js";
import type { MachinedOptions } from "../machined/machined.js";
import { NetlinkNetKernel } from "../sys/net-netlink.js";
import type { Paths } from "../sys/paths.js";
import { readFileSync } from "node:fs";
import path from "node:path";

export { networkDefinitions } from "../controllers/network/index.js";

/** The longest the boot waits for udevd to settle the devices before it goes on (udevd's own trigger timeout). */
const DEVICES_WAIT_MS = 300_000;

export interface NetworkingOptions {
  /** A node: the specs are applied to the kernel (links, addresses, routes, DHCP), /etc files and the kernel hostname written. */
  node: boolean;
  /**
   * The sandbox run inside a network namespace of its own: the specs are applied and
   * /etc files written under the state directory, but the (UTS-wide) hostname is left alone.
   */
  applyInSandbox?: boolean;
  /** The kernel command line the network sources read (a node reads <proc>/cmdline). */
  cmdline?: string;
  waitForAddressMs?: number;
}

/**
 * The networking controllers for machined's one list. On a node they apply the
 * network config and own hostname/resolv.conf; in the sandbox they only observe the
 * host (statuses), as Talos does in container mode, unless told it has a namespace of its own.
 */
export function networking(paths: Paths, opts: NetworkingOptions): NonNullable<MachinedOptions["networking"]> {
  const waitMs = opts.waitForAddressMs;
  const apply = opts.node || opts.applyInSandbox === true;
  const cmdline = opts.cmdline ?? (opts.node ? readProcCmdline(paths) : "");
  const hold = new NetworkChangeHold();
  return {
    hold,
    controllers: [
      ...networkControllers({
        kernel: new NetlinkNetKernel(),
        paths,
        dhcp: apply,
        writeResolvConf: apply,
        setKernelHostname: opts.node,
        cmdline,
        hold,
      }),
      // DHCPv6 where .machine.network.interfaces asks for it (dhcpOptions.ipv6).
      ...(apply ? [new Dhcp6OperatorController()] : []),
    ],
    // With DHCP running, an IPv6 SLAAC address alone waits briefly for the DHCPv4 lease (machined still re-prints on change).
    // The address wait starts once links can come up (udevd names them first, which takes tens of seconds
    // under emulation); otherwise the boot goes on without the lease and its start competes with DHCP's.
    ...(waitMs
      ? {
          ready: async (state, signal) => {
            await devicesReady(state, AbortSignal.any([signal, AbortSignal.timeout(DEVICES_WAIT_MS)]));
            await waitForNodeAddress(state, signal, waitMs, opts.node ? { ipv4GraceMs: 10_000 } : {});
          },
        }
      : {}),
  };
}

function readProcCmdline(paths: Paths): string {
  try {
    return readFileSync(path.join(paths.proc, "cmdline"), "utf8");
  } catch {
    // No /proc/cmdline (a container): no kernel arguments.
    return "";
  }
}
