// OpenStack, read as Talos v1.7 reads it: the config drive first (a volume labelled config-2
// holding openstack/latest/{meta_data.json,network_data.json,user_data}), else the metadata
// service at 169.254.169.254 (the same three documents, and the EC2-style public-ipv4 and
// instance-type). network_data.json gives the links (eth<index>, following the node's link with
// the same MAC once known; bonds as bond<N>), their networks (DHCPv4/DHCPv6, static addresses with their
// gateway and routes) and the DNS services. User data starting #cloud-config is not a
// machine configuration.

import {
  dhcp4Operator,
  dhcp6Operator,
  emptyPlatformNetworkConfig,
  hostnameSpec,
  parseIp,
  prefixFrom,
  resolvers,
  staticAddress,
  staticRoute,
  validIps,
  PlatformDataError,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { withBondDefaults } from "../../network/bond-defaults.js";
import { DEFAULT_ROUTE_METRIC } from "../../network/config-specs.js";
import { bondValue, type LinkSpecSpec } from "../../resources/catalog/network.js";
import { describeError } from "../../errors.js";
import { arr, asObject, num, str, type JsonObject } from "./json-fields.js";
import { getOptional, parseJson, type MetadataHttp } from "./metadata-http.js";
import { nonEmpty, type CloudPlatform, type PlatformIo } from "./platform.js";

export const configDriveLabel = "config-2";
export const configDriveFiles = {
  metaData: "openstack/latest/meta_data.json",
  networkData: "openstack/latest/network_data.json",
  userData: "openstack/latest/user_data",
} as const;
export const openstackEndpoint = "http://169.254.169.254/";

/** The three documents, from the config drive or the metadata service (absent ones undefined). */
export interface OpenstackDocuments {
  source: "config-drive" | "metadata-service";
  metaData?: Buffer;
  networkData?: Buffer;
  userData?: Buffer;
}

export interface OpenstackMetadata {
  uuid: string;
  hostname: string;
  availabilityZone: string;
  instanceType: string;
}

/**
 * The config drive's documents; undefined without a drive, or (as Talos) with one that cannot be
 * read or has no user_data: the metadata service is asked then.
 */
async function fromConfigDrive(io: PlatformIo): Promise<OpenstackDocuments | undefined> {
  const volume = await io.readVolume([configDriveLabel], Object.values(configDriveFiles)).catch((err: unknown) => {
    io.log.warn("the config drive could not be read; asking the metadata service", { error: describeError(err) });
    return undefined;
  });
  if (!volume) return undefined;
  io.log.info("found config disk (config-drive)", { device: volume.device });
  const userData = volume.files.get(configDriveFiles.userData);
  if (!userData) return undefined;
  return {
    source: "config-drive",
    metaData: volume.files.get(configDriveFiles.metaData),
    networkData: volume.files.get(configDriveFiles.networkData),
    userData,
  };
}

async function fromMetadataService(http: MetadataHttp): Promise<OpenstackDocuments> {
  const get = (path: string) => getOptional(http, openstackEndpoint + path);
  return {
    source: "metadata-service",
    metaData: await get(configDriveFiles.metaData),
    networkData: await get(configDriveFiles.networkData),
    userData: await get(configDriveFiles.userData),
  };
}

export async function readOpenstackDocuments(io: PlatformIo): Promise<OpenstackDocuments> {
  return (await fromConfigDrive(io)) ?? fromMetadataService(io.http);
}

export function parseOpenstackMetadata(doc: unknown): OpenstackMetadata {
  const what = configDriveFiles.metaData;
  const o = doc === undefined ? {} : asObject(doc, what);
  return {
    uuid: str(o, "uuid", what),
    hostname: str(o, "hostname", what),
    availabilityZone: str(o, "availability_zone", what),
    instanceType: str(o, "instance_type", what),
  };
}

const physicalTypes = new Set(["phy", "vif", "ovs", "bridge", "tap", "vhostuser", "hw_veb"]);

function bondLink(name: string, l: JsonObject, what: string): LinkSpecSpec {
  const miimonText = str(l, "bond_miimon", what);
  const miimon = miimonText === "" ? 0 : Number(miimonText);
  if (!Number.isInteger(miimon) || miimon < 0)
    throw new PlatformDataError(`${what}: bond_miimon is not a number: ${JSON.stringify(miimonText)}`, {
      value: miimonText,
    });
  const spec = {
    mode: str(l, "bond_mode", what),
    xmitHashPolicy: str(l, "bond_xmit_hash_policy", what) || "layer2",
    lacpRate: "fast",
    arpValidate: "none",
    arpAllTargets: "any",
    primaryReselect: "always",
    failOverMac: "none",
    ...(miimon ? { miimon } : {}),
    updelay: 200,
    downdelay: 200,
  };
  for (const [key, option] of [
    ["mode", "bond_mode"],
    ["xmitHashPolicy", "bond_xmit_hash_policy"],
  ] as const) {
    try {
      bondValue(key, spec[key]);
    } catch (err) {
      throw new PlatformDataError(
        `${what}: invalid ${option} ${JSON.stringify(spec[key])}`,
        { value: spec[key] },
        { cause: err },
      );
    }
  }
  return {
    name,
    logical: true,
    up: true,
    mtu: num(l, "mtu", what),
    kind: "bond",
    type: "ether",
    bondMaster: withBondDefaults(spec),
    layer: "platform",
  };
}

/** Talos's ParseMetadata for OpenStack. */
export function parseOpenstack(
  meta: OpenstackMetadata,
  networkDoc: unknown,
  externalIPs: string[],
): PlatformNetworkConfig {
  const what = configDriveFiles.networkData;
  const net = networkDoc === undefined ? {} : asObject(networkDoc, what);
  const config = emptyPlatformNetworkConfig();
  if (meta.hostname) config.hostnames.push(hostnameSpec(meta.hostname));
  config.externalIPs = externalIPs;
  const dns = arr(net, "services", what)
    .map((v) => asObject(v, `${what} services`))
    .filter((svc) => str(svc, "type", what) === "dns" && str(svc, "address", what) !== "")
    .map((svc) => parseIp(str(svc, "address", what), `${what} dns service`));
  if (dns.length > 0) config.resolvers.push(resolvers(dns));

  const netLinks = arr(net, "links", what).map((v) => asObject(v, `${what} links`));
  const names = new Map<string, string>();
  const bondOf = new Map<string, string>();
  let bonds = 0;
  for (const l of netLinks) {
    if (str(l, "type", what) !== "bond") continue;
    const name = `bond${bonds++}`;
    names.set(str(l, "id", what), name);
    config.links.push(bondLink(name, l, `${what} link ${str(l, "id", what)}`));
    for (const member of arr(l, "bond_links", what)) bondOf.set(String(member), name);
  }
  const slaveIndex = new Map<string, number>();
  for (const [i, l] of netLinks.entries()) {
    if (!physicalTypes.has(str(l, "type", what))) continue;
    const id = str(l, "id", what);
    // eth<index> until the node's link with the MAC is known (the controller renames it then).
    const name = `eth${i}`;
    const mac = str(l, "ethernet_mac_address", what);
    if (mac !== "") config.linkMacs = { ...config.linkMacs, [name]: mac.toLowerCase() };
    names.set(id, name);
    const link: LinkSpecSpec = {
      name,
      logical: false,
      up: true,
      mtu: num(l, "mtu", what),
      kind: "",
      type: "ether",
      layer: "platform",
    };
    const master = bondOf.get(id);
    if (master) {
      const index = slaveIndex.get(master) ?? 0;
      Object.assign(link, { masterName: master, slaveIndex: index });
      slaveIndex.set(master, index + 1);
    }
    config.links.push(link);
  }

  for (const n of arr(net, "networks", what).map((v) => asObject(v, `${what} networks`))) {
    const link = names.get(str(n, "link", what));
    if (str(n, "id", what) === "" || !link) continue;
    const type = str(n, "type", what);
    const where = `${what} network ${str(n, "id", what)}`;
    if (type === "ipv4_dhcp")
      config.operators.push({
        ...dhcp4Operator(link),
        dhcp4: { routeMetric: DEFAULT_ROUTE_METRIC, skipHostnameRequest: true },
      });
    else if (["ipv6_dhcp", "ipv6_dhcpv6-stateless", "ipv6_dhcpv6-stateful"].includes(type))
      config.operators.push({
        ...dhcp6Operator(link),
        dhcp6: { routeMetric: 2 * DEFAULT_ROUTE_METRIC, skipHostnameRequest: true },
      });
    else if (!["ipv4", "ipv6", "ipv6_slaac"].includes(type)) continue;
    const address = str(n, "ip_address", what);
    if (address !== "") {
      const p = prefixFrom(address, str(n, "netmask", what), where);
      config.addresses.push(staticAddress(link, p));
      const gateway = str(n, "gateway", what);
      if (gateway !== "") {
        config.routes.push(
          staticRoute(link, p.family, {
            gateway: parseIp(gateway, `${where} gateway`),
            priority: p.family === "inet6" ? 2 * DEFAULT_ROUTE_METRIC : DEFAULT_ROUTE_METRIC,
          }),
        );
      }
    }
    for (const r of arr(n, "routes", what).map((v) => asObject(v, `${where} routes`))) {
      const gateway = parseIp(str(r, "gateway", where), `${where} route gateway`);
      const dst = prefixFrom(str(r, "network", where), str(r, "netmask", where), `${where} route network`);
      const isDefault = dst.bits === 0 && (dst.address === "0.0.0.0" || dst.address === "::");
      config.routes.push(
        staticRoute(link, dst.family, {
          gateway,
          dst: isDefault ? "" : `${dst.address}/${dst.bits}`,
          priority: isDefault && dst.family === "inet6" ? 2 * DEFAULT_ROUTE_METRIC : DEFAULT_ROUTE_METRIC,
        }),
      );
    }
  }

  config.metadata = {
    platform: "openstack",
    ...(meta.hostname ? { hostname: meta.hostname } : {}),
    ...(meta.availabilityZone ? { zone: meta.availabilityZone } : {}),
    ...(meta.instanceType ? { instanceType: meta.instanceType } : {}),
    ...(meta.uuid ? { instanceId: meta.uuid } : {}),
    providerId: `openstack:///${meta.uuid}`,
  };
  return config;
}

async function readNetwork(io: PlatformIo): Promise<PlatformNetworkConfig> {
  const docs = await readOpenstackDocuments(io);
  const json = (b: Buffer | undefined, what: string) => (b === undefined ? undefined : parseJson(b, what));
  const meta = parseOpenstackMetadata(json(docs.metaData, configDriveFiles.metaData));
  const externalIPs: string[] = [];
  if (docs.source === "metadata-service") {
    // As Talos: the EC2-style keys only where the service was the source; they may be missing.
    const publicIp =
      (await getOptional(io.http, `${openstackEndpoint}latest/meta-data/public-ipv4`))?.toString("utf8").trim() ?? "";
    externalIPs.push(...validIps([publicIp]));
    if (meta.instanceType === "")
      meta.instanceType =
        (await getOptional(io.http, `${openstackEndpoint}latest/meta-data/instance-type`))?.toString("utf8").trim() ??
        "";
  }
  return parseOpenstack(meta, json(docs.networkData, configDriveFiles.networkData), externalIPs);
}

async function readUserData(io: PlatformIo): Promise<Buffer | undefined> {
  const data = nonEmpty((await readOpenstackDocuments(io)).userData);
  if (data && data.subarray(0, "#cloud-config".length).toString("utf8") === "#cloud-config") return undefined;
  return data;
}

export const openstack: CloudPlatform = { name: "openstack", readNetwork, readUserData };
