// A DHCPv6 lease as an operator's output (Talos's DHCP6 operator): each address as a
// /128 on the link, the DNS and NTP servers, and the hostname from the FQDN option.

import type { OperatorOutput } from "../operator-output.js";
import type { Lease6 } from "./client.js";

export function lease6ToOutput(linkName: string, lease: Lease6): OperatorOutput {
  const out: OperatorOutput = {
    addresses: lease.addresses.map((a) => ({ linkName, address: a.address, prefixLen: 128 })),
    routes: [],
    dnsServers: lease.dnsServers,
    timeServers: lease.ntpServers,
  };
  if (lease.fqdn) {
    const [hostname = "", ...domain] = lease.fqdn.split(".");
    if (hostname) out.hostname = { hostname, domainname: domain.join(".") };
  }
  return out;
}
