// The lines a node in maintenance mode shows on its console: where it can be
// reached, that it waits for a configuration, and the certificate fingerprint
// to pin with `talosctl --cert-fingerprint`.

import { logger } from "../log.js";
import { spkiFingerprint } from "../pki/fingerprint.js";
import {
  MaintenanceServiceCertificatesId,
  MaintenanceServiceCertificatesType,
  SECRETS_NAMESPACE,
  type MaintenanceServiceCertsSpec,
} from "../resources/catalog/secrets.js";
import type { ResourceState } from "../resources/state.js";
import { splitListen } from "../services/readiness.js";
import { installFailureLines } from "./install-failure.js";
import { nodeAddresses } from "./node-identity.js";
import { published } from "./published.js";

const consoleLog = logger("maintenance");

export function maintenanceConsoleLines(opts: { addresses: string[]; port: number; fingerprint: string; installFailure?: string | undefined }): string[] {
  const target = (a: string) => (a.includes(":") ? `[${a}]` : a);
  const first = opts.addresses[0] ?? "<node-ip>";
  const node = opts.port === 50000 ? first : `${target(first)}:${opts.port}`;
  return [
    ...(opts.installFailure !== undefined ? installFailureLines(opts.installFailure) : []),
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

/**
 * Prints where the maintenance API (apid listening on `listen`) is reached once its certificate is
 * published by the secrets controllers, and again when the node's addresses change, until `signal` aborts.
 */
export async function announceMaintenance(state: ResourceState, listen: string, signal: AbortSignal, installFailure?: string): Promise<void> {
  const cert = await published<MaintenanceServiceCertsSpec>(state, SECRETS_NAMESPACE, MaintenanceServiceCertificatesType, MaintenanceServiceCertificatesId, signal);
  if (!cert) return;
  const { host: listenHost, port } = splitListen(listen);
  // A listener bound to one address (the sandbox) is reachable only there.
  const reachableNow = () => (["", "0.0.0.0", "::"].includes(listenHost) ? nodeAddresses(state) : [listenHost]);
  const reachable = reachableNow();
  const fingerprint = spkiFingerprint(cert.server.crt);
  const print = (addresses: string[]) => {
    for (const line of maintenanceConsoleLines({ addresses, port, fingerprint, installFailure })) consoleLog.info(line);
  };
  print(reachable);
  // Addresses that arrive later (the DHCPv4 lease after IPv6 SLAAC) are printed again, until a config is applied.
  reprintOnAddressChange(state, signal, { printed: reachable, reachable: reachableNow, print });
}
