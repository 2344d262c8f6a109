// The lines a node in maintenance mode shows on its console: where it can be
// reached, that it waits for a configuration, and the certificate fingerprint
// to pin with `talosctl --cert-fingerprint`.

import type { ResourceState } from "../resources/state.js";

export function maintenanceConsoleLines(opts: { addresses: string[]; port: number; fingerprint: string }): string[] {
  const target = (a: string) => (a.includes(":") ? `[${a}]` : a);
  const first = opts.addresses[0] ?? "<node-ip>";
  const node = opts.port === 50000 ? first : `${target(first)}:${opts.port}`;
  return [
    "entering maintenance service",
    "this machine is reachable at:",
    ...opts.addresses.map((a) => `\t${a}`),
    `server certificate issued, fingerprint: ${opts.fingerprint}`,
    "waiting for configuration; upload it using talosctl:",
    `\ttalosctl apply-config --insecure --nodes ${node} --file <config.yaml>`,
    "optionally with node fingerprint check:",
    `\ttalosctl apply-config --insecure --nodes ${node} --cert-fingerprint '${opts.fingerprint}' --file <config.yaml>`,
  ];
}

const networkNs = "network";
const nodeAddressesType = "NodeAddresses.net.talos.dev";

/**
 * Calls `print` with the reachable addresses each time they change (NodeAddresses
 * `current`/`default` events), as Talos re-prints where a node in maintenance can be
 * reached: the console lines may come before a DHCPv4 lease. `printed` is what the
 * console already shows; an empty list is never printed. Stops when `signal` aborts.
 */
export function reprintOnAddressChange(
  state: ResourceState,
  signal: AbortSignal,
  opts: { printed: readonly string[]; reachable: () => string[]; print: (addresses: string[]) => void },
): void {
  let last = [...opts.printed];
  const check = () => {
    if (signal.aborted) return;
    const now = opts.reachable();
    if (now.length === 0 || sameList(now, last)) return;
    last = now;
    opts.print(now);
  };
  for (const id of ["current", "default"]) {
    state.watch({ namespace: networkNs, type: nodeAddressesType, id }, { signal }, check);
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
