import os from "node:os";
import type { ResourceState } from "../resources/state.js";

// Where this node can be reached: the networking controllers' resources when
// they run (metal), else the host's interfaces (sandbox / container mode).

const networkNs = "network";
const nodeAddressesType = "NodeAddresses.net.talos.dev";
const hostnameStatusesType = "HostnameStatuses.net.talos.dev";

function stripPrefix(cidr: string): string {
  const slash = cidr.indexOf("/");
  return slash < 0 ? cidr : cidr.slice(0, slash);
}

/** Node IPs (no prefix length), without loopback. */
export function nodeAddresses(state: ResourceState | undefined): string[] {
  const res = state?.get<{ addresses?: string[] }>(networkNs, nodeAddressesType, "current");
  // Once the controllers publish it, their list is the answer, empty before DHCP too.
  if (res) return [...new Set((res.spec.addresses ?? []).map(stripPrefix))];
  const out: string[] = [];
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) {
      if (a.internal) continue;
      if (a.family === "IPv6" && a.address.toLowerCase().startsWith("fe80")) continue;
      out.push(a.address);
    }
  }
  return [...new Set(out)];
}

/** Hostname and FQDN as the network controllers report them, else the host's. */
export function nodeHostname(state: ResourceState | undefined): { hostname: string; fqdn: string } {
  const res = state?.get<{ hostname?: string; domainname?: string }>(networkNs, hostnameStatusesType, "hostname");
  const hostname = res?.spec.hostname || os.hostname();
  const domain = res?.spec.domainname ?? "";
  return { hostname, fqdn: domain ? `${hostname}.${domain}` : hostname };
}

/**
 * Resolves once the node has a non-loopback address (e.g. from DHCP), or after
 * `limitMs` without one: maintenance mode then starts with what there is.
 * With `ipv4GraceMs` (a DHCPv4 operator runs), an IPv6-only list (SLAAC comes
 * first) waits up to that much longer for an IPv4 address (the lease).
 */
export function waitForNodeAddress(
  state: ResourceState,
  signal: AbortSignal,
  limitMs: number,
  opts: { ipv4GraceMs?: number } = {},
): Promise<void> {
  return new Promise((resolve) => {
    const ac = new AbortController();
    let grace: NodeJS.Timeout | undefined;
    const finish = () => {
      ac.abort();
      clearTimeout(timer);
      clearTimeout(grace);
      signal.removeEventListener("abort", finish);
      resolve();
    };
    const timer = setTimeout(finish, limitMs);
    signal.addEventListener("abort", finish, { once: true });
    state.watch<{ addresses?: string[] }>(
      { namespace: networkNs, type: nodeAddressesType, id: "current" },
      { signal: ac.signal },
      (ev) => {
        const addresses = ev.type === "destroyed" ? [] : (ev.resource.spec?.addresses ?? []);
        if (addresses.length === 0) return;
        if (opts.ipv4GraceMs === undefined || addresses.some((a) => !stripPrefix(a).includes(":"))) return finish();
        grace ??= setTimeout(finish, opts.ipv4GraceMs);
      },
    );
  });
}
