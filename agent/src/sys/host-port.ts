// Host and port in one address, read and written as Go's net.SplitHostPort and
// net.JoinHostPort do (IPv6 in brackets), so every address in the agent is read one way.

import { InvalidInputError } from "../errors.js";

/**
 * The host and port of `address`: `host:port`, `[v6]:port`, `:port` (host ""), or a host alone (a name,
 * an IPv4 address, an IPv6 address bare or in brackets), which gets `defaultPort`. The host is returned
 * without brackets. Without a port and without a default, InvalidInputError.
 */
export function splitHostPort(address: string, defaultPort?: number): { host: string; port: number } {
  const withDefault = (host: string) => {
    if (defaultPort === undefined)
      throw new InvalidInputError(`address ${JSON.stringify(address)} has no port`, { address });
    return { host, port: defaultPort };
  };
  const bracketed = /^\[([^\]]*)\](?::(\d+))?$/.exec(address);
  if (bracketed)
    return bracketed[2] === undefined
      ? withDefault(bracketed[1]!)
      : { host: bracketed[1]!, port: Number(bracketed[2]) };
  const colon = address.lastIndexOf(":");
  // One colon before digits: host:port; more colons without brackets: an IPv6 address alone.
  if (colon >= 0 && address.indexOf(":") === colon && /^\d+$/.test(address.slice(colon + 1))) {
    return { host: address.slice(0, colon), port: Number(address.slice(colon + 1)) };
  }
  return withDefault(address);
}

/** "host:port" (IPv6 in brackets) as Go's net.JoinHostPort writes it. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}
