// The lines a node in maintenance mode shows on its console: where it can be
// reached, that it waits for a configuration, and the certificate fingerprint
// to pin with `talosctl --cert-fingerprint`.

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
