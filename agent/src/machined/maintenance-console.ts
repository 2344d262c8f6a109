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
import { splitHostPort } from "../sys/host-port.js";
import { installFailureLines } from "./install-failure.js";
import { nodeAddresses } from "./node-identity.js";
import { published } from "./published.js";

const consoleLog = logger("maintenance");

export function maintenanceConsoleLines(opts: {
  addresses: string[];
  port: number;
  fingerprint: string;
  installFailure?: string | undefined;
}): string[] {
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

/** What the maintenance lines name: where the node is reached and its certificate's fingerprint. */
export interface MaintenanceBanner {
  addresses: string[];
  fingerprint: string;
}

/**
 * Calls `print` each time the reachable addresses (NodeAddresses `current`/`default`) or the maintenance
 * certificate's fingerprint change, as Talos prints again where a node in maintenance is reached and the
 * fingerprint of a certificate issued again (its SANs follow the addresses, each issue has a new key):
 * the console lines may come before a DHCPv4 lease. `printed` is what the console already shows; no
 * address, nothing printed. Stops when `signal` aborts.
 */
export function reprintOnChange(
  state: ResourceState,
  signal: AbortSignal,
  opts: {
    printed: MaintenanceBanner;
    current: () => MaintenanceBanner | undefined;
    print: (banner: MaintenanceBanner) => void;
  },
): void {
  let last = { addresses: [...opts.printed.addresses], fingerprint: opts.printed.fingerprint };
  const check = () => {
    if (signal.aborted) return;
    const now = opts.current();
    if (
      !now ||
      now.addresses.length === 0 ||
      (sameList(now.addresses, last.addresses) && now.fingerprint === last.fingerprint)
    )
      return;
    last = now;
    opts.print(now);
  };
  for (const id of ["current", "default"]) {
    state.watch({ namespace: networkNs, type: nodeAddressesType, id }, { signal }, check);
  }
  state.watch(
    { namespace: SECRETS_NAMESPACE, type: MaintenanceServiceCertificatesType, id: MaintenanceServiceCertificatesId },
    { signal },
    check,
  );
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Prints where the maintenance API (apid listening on `listen`) is reached once its certificate is
 * published by the secrets controllers, and again when the node's addresses or the certificate change, until `signal` aborts.
 */
export async function announceMaintenance(
  state: ResourceState,
  listen: string,
  signal: AbortSignal,
  installFailure?: string,
): Promise<void> {
  const cert = await published<MaintenanceServiceCertsSpec>(
    state,
    SECRETS_NAMESPACE,
    MaintenanceServiceCertificatesType,
    MaintenanceServiceCertificatesId,
    signal,
  );
  if (!cert) return;
  const { host: listenHost, port } = splitHostPort(listen);
  // A listener bound to one address (the sandbox) is reachable only there.
  const reachableNow = () => (["", "0.0.0.0", "::"].includes(listenHost) ? nodeAddresses(state) : [listenHost]);
  // Every address event asks; the certificate changes far less often.
  let known = { crt: "", fingerprint: "" };
  const fingerprintOf = (crt: string) =>
    known.crt === crt ? known.fingerprint : (known = { crt, fingerprint: spkiFingerprint(crt) }).fingerprint;
  const current = (): MaintenanceBanner | undefined => {
    const now = state.get<MaintenanceServiceCertsSpec>(
      SECRETS_NAMESPACE,
      MaintenanceServiceCertificatesType,
      MaintenanceServiceCertificatesId,
    )?.spec;
    return now && { addresses: reachableNow(), fingerprint: fingerprintOf(now.server.crt) };
  };
  const print = (banner: MaintenanceBanner) => {
    for (const line of maintenanceConsoleLines({ ...banner, port, installFailure })) consoleLog.info(line);
  };
  const first = { addresses: reachableNow(), fingerprint: fingerprintOf(cert.server.crt) };
  // Before DHCP (the listener starts beside it) there is nowhere to name yet: the first address prints it.
  if (first.addresses.length > 0) print(first);
  // Addresses that arrive later (the DHCPv4 lease after IPv6 SLAAC), and the certificate issued again for them, are printed again until a config is applied.
  reprintOnChange(state, signal, { printed: first, current, print });
}
