// Equinix Metal: https://metadata.platformequinix.com/metadata, read as Talos v1.7 reads it:
// the interfaces of a bond enslaved to it (each named by the metadata until the node's link
// with its permanent MAC is known), the bond in the metadata's mode (LACP settings as Talos
// sets them), the enabled management addresses on the first bond with a default route through
// each public one's gateway and, through a private one's, routes to the private subnets and to
// the IPv4 BGP peers. /userdata is the configuration. The platform is of metal mode: the node
// installs itself, as on bare metal. It is told how acquiring the configuration went
// (equinixmetal-events.ts).

import { withBondDefaults } from "../../network/bond-defaults.js";
import { DEFAULT_ROUTE_METRIC } from "../../network/config-specs.js";
import {
  emptyPlatformNetworkConfig,
  hostnameSpec,
  parseIp,
  parsePrefix,
  PlatformDataError,
  staticAddress,
  staticRoute,
  validIps,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { bondNames, type LinkSpecSpec } from "../../resources/catalog/network.js";
import { sendEquinixMetalEvent } from "./equinixmetal-events.js";
import { arr, asObject, bool, num, obj, str, strings, type JsonObject } from "./json-fields.js";
import { getOptional, getRequired, parseJson } from "./metadata-http.js";
import { platformMetadataSpec } from "./metadata-spec.js";
import { nonEmpty, type CloudPlatform, type PlatformIo } from "./platform.js";

export const equinixMetalMetadataUrl = "https://metadata.platformequinix.com/metadata";
export const equinixMetalUserDataUrl = "https://metadata.platformequinix.com/userdata";
const what = "metadata";

function bondLink(name: string, modeNumber: number): LinkSpecSpec {
  const mode = bondNames.mode[modeNumber];
  if (mode === undefined)
    throw new PlatformDataError(`${what}: network bonding mode ${modeNumber} is not a bond mode`, {
      value: modeNumber,
    });
  return {
    name,
    logical: true,
    up: true,
    mtu: 0,
    kind: "bond",
    type: "ether",
    bondMaster: withBondDefaults({
      mode,
      xmitHashPolicy: "layer3+4",
      lacpRate: "slow",
      arpValidate: "none",
      arpAllTargets: "any",
      primaryReselect: "always",
      failOverMac: "none",
      miimon: 100,
      updelay: 200,
      downdelay: 200,
    }),
    layer: "platform",
  };
}

/** The bonds' member links and the bonds; returns the first bond's name ("" without one). */
function bondLinks(config: PlatformNetworkConfig, network: JsonObject): string {
  const members = new Map<string, number>();
  for (const [i, v] of arr(network, "interfaces", `${what} network`).entries()) {
    const where = `${what} network interfaces[${i}]`;
    const iface = asObject(v, where);
    const bond = str(iface, "bond", where);
    if (bond === "") continue;
    const name = str(iface, "name", where);
    const index = members.get(bond) ?? 0;
    members.set(bond, index + 1);
    // Named by the metadata until the node's link with this MAC is known (the controller renames it then).
    config.linkMacs = { ...config.linkMacs, [name]: str(iface, "mac", where).toLowerCase() };
    config.links.push({
      name,
      logical: false,
      up: true,
      mtu: 0,
      kind: "",
      type: "ether",
      masterName: bond,
      ...(index > 0 ? { slaveIndex: index } : {}),
      layer: "platform",
    });
  }
  const mode = num(obj(network, "bonding", `${what} network`), "mode", `${what} network bonding`);
  for (const bond of members.keys()) config.links.push(bondLink(bond, mode));
  return members.keys().next().value ?? "";
}

interface ManagementAddress {
  public: boolean;
  prefix: { address: string; family: "inet4" | "inet6"; bits: number };
  gateway: string;
  where: string;
}

function managementAddresses(network: JsonObject): ManagementAddress[] {
  return arr(network, "addresses", `${what} network`).flatMap((v, i) => {
    const where = `${what} network addresses[${i}]`;
    const a = asObject(v, where);
    if (!(bool(a, "enabled", where) && bool(a, "management", where))) return [];
    const prefix = parsePrefix(`${str(a, "address", where)}/${num(a, "cidr", where)}`, `${where} address`);
    return [{ public: bool(a, "public", where), prefix, gateway: str(a, "gateway", where), where }];
  });
}

/** Talos's ParseMetadata for Equinix Metal. */
export function parseEquinixMetalMetadata(doc: unknown): PlatformNetworkConfig {
  const m = asObject(doc, what);
  const network = obj(m, "network", what);
  const config = emptyPlatformNetworkConfig();
  const bond = bondLinks(config, network);
  const addresses = managementAddresses(network);
  config.addresses.push(...addresses.map((a) => staticAddress(bond, a.prefix)));
  config.externalIPs = validIps(addresses.filter((a) => a.public).map((a) => a.prefix.address));
  let privateGateway = "";
  const privateSubnets = strings(m, "private_subnets", what);
  for (const a of addresses) {
    const family = a.prefix.family;
    if (a.public) {
      const priority = family === "inet6" ? 2 * DEFAULT_ROUTE_METRIC : DEFAULT_ROUTE_METRIC;
      config.routes.push(staticRoute(bond, family, { gateway: parseIp(a.gateway, `${a.where} gateway`), priority }));
      continue;
    }
    for (const subnet of privateSubnets) {
      privateGateway = parseIp(a.gateway, `${a.where} gateway`);
      const dst = parsePrefix(subnet, `${what} private_subnets`);
      config.routes.push(
        staticRoute(bond, family, { gateway: privateGateway, dst: `${dst.address}/${dst.bits}`, priority: 0 }),
      );
    }
  }
  const hostname = str(m, "hostname", what);
  if (hostname) config.hostnames.push(hostnameSpec(hostname));
  const id = str(m, "id", what);
  config.metadata = platformMetadataSpec("equinixMetal", {
    hostname,
    region: str(m, "metro", what),
    zone: str(m, "facility", what),
    instanceType: str(m, "plan", what),
    instanceId: id,
    providerId: `equinixmetal://${id}`,
  });
  for (const [i, v] of arr(m, "bgp_neighbors", what).entries()) {
    const where = `${what} bgp_neighbors[${i}]`;
    const neighbor = asObject(v, where);
    if (num(neighbor, "address_family", where) !== 4) continue;
    for (const peer of strings(neighbor, "peer_ips", where)) {
      const dst = `${parseIp(peer, `${where} peer_ips`)}/32`;
      // Without a private address there is no gateway: the peers are then on the link.
      config.routes.push(
        staticRoute(bond, "inet4", {
          gateway: privateGateway,
          dst,
          priority: 0,
          ...(privateGateway === "" ? { scope: "link" as const } : {}),
        }),
      );
    }
  }
  return config;
}

export const equinixMetal: CloudPlatform = {
  name: "equinixMetal",
  readNetwork: async (io: PlatformIo) =>
    parseEquinixMetalMetadata(parseJson(await getRequired(io.http, equinixMetalMetadataUrl), what)),
  readUserData: async (io: PlatformIo) => nonEmpty(await getOptional(io.http, equinixMetalUserDataUrl)),
  sendEvent: sendEquinixMetalEvent,
};
