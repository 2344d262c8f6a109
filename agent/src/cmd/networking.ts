import { networkControllers } from "../controllers/network/index.js";
import { Dhcp6OperatorController } from "../controllers/network/dhcp6-operator.js";
import { waitForNodeAddress } from "../machined/node-identity.js";
import type { MachinedOptions } from "../machined/machined.js";
import { IprouteNetKernel } from "../sys/net-iproute.js";
import type { Paths } from "../sys/paths.js";

export { networkDefinitions } from "../controllers/network/index.js";

/**
 * The networking controllers for machined's one list. On a node they run DHCP on the
 * first link and own hostname/resolv.conf; in the sandbox they only observe the host
 * (statuses), as Talos does in container mode.
 */
export function networking(paths: Paths, opts: { node: boolean; waitForAddressMs?: number }): NonNullable<MachinedOptions["networking"]> {
  const waitMs = opts.waitForAddressMs;
  return {
    controllers: [
      ...networkControllers({
        kernel: new IprouteNetKernel(),
        paths,
        dhcp: opts.node,
        writeResolvConf: opts.node,
        setKernelHostname: opts.node,
      }),
      // DHCPv6 where .machine.network.interfaces asks for it (dhcpOptions.ipv6).
      ...(opts.node ? [new Dhcp6OperatorController()] : []),
    ],
    // With DHCP running, an IPv6 SLAAC address alone waits briefly for the DHCPv4 lease (machined still re-prints on change).
    ...(waitMs ? { ready: (state, signal) => waitForNodeAddress(state, signal, waitMs, opts.node ? { ipv4GraceMs: 10_000 } : {}) } : {}),
  };
}
