import { networkControllers } from "../controllers/network/index.js";
import { logger } from "../log.js";
import { waitForNodeAddress } from "../machined/node-identity.js";
import type { ControllerRuntime } from "../resources/controller-runtime.js";
import type { ResourceState } from "../resources/state.js";
import { IprouteNetKernel } from "../sys/net-iproute.js";
import type { Paths } from "../sys/paths.js";

export { networkDefinitions } from "../controllers/network/index.js";

/**
 * Registers the networking controllers in machined's controller runtime. On a node
 * they run DHCP on the first link and own hostname/resolv.conf; in the sandbox
 * they only observe the host (statuses), as Talos does in container mode.
 */
export function networking(paths: Paths, opts: { node: boolean; waitForAddressMs?: number }) {
  return async (runtime: ControllerRuntime, state: ResourceState, signal: AbortSignal): Promise<void> => {
    for (const c of networkControllers({
      kernel: new IprouteNetKernel(),
      paths,
      dhcp: opts.node,
      writeResolvConf: opts.node,
      setKernelHostname: opts.node,
    })) {
      runtime.register(c);
    }
    logger("machined").info("networking controllers started", { dhcp: opts.node });
    // With DHCP running, an IPv6 SLAAC address alone waits briefly for the DHCPv4 lease (machined still re-prints on change).
    if (opts.waitForAddressMs) await waitForNodeAddress(state, signal, opts.waitForAddressMs, opts.node ? { ipv4GraceMs: 10_000 } : {});
  };
}
