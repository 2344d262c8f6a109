// Azure, read as Talos v1.7 reads it. The configuration is the base64 CustomData of ovf-env.xml
// on the provisioning CD (a UDF volume on sr*/cdrom*/...); once it is read (or found missing)
// the node tells the wire server (168.63.129.16) it is Ready, as the Linux agent does, so the
// VM's provisioning completes. The instance metadata service (every request with
// `Metadata: true`, api-version 2021-12-13, 2019-06-01 where that is refused) gives the compute
// facts, the interfaces (public addresses as external IPs; IPv6 by DHCPv6 with Azure's fixed
// gateway) and the load balancer's public frontends.

import { DEFAULT_ROUTE_METRIC } from "../../network/config-specs.js";
import {
  dhcp6Operator,
  emptyPlatformNetworkConfig,
  hostnameSpec,
  staticRoute,
  validIps,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { describeError } from "../../errors.js";
import { arr, asArray, asObject, obj, str } from "./json-fields.js";
import {
  getOptional,
  getRequired,
  MetadataError,
  MetadataUnreachableError,
  parseJson,
  type MetadataHttp,
} from "./metadata-http.js";
import type { CloudPlatform, PlatformIo } from "./platform.js";
import { retryWhileUnreachable } from "./retry.js";

export const azureApiVersions = ["2021-12-13", "2019-06-01"] as const;
export const azureImds = "http://169.254.169.254/metadata/";
export const wireServer = "http://168.63.129.16";
const imdsHeaders = { Metadata: "true" };
const wireHeaders = {
  "x-ms-agent-name": "WALinuxAgent",
  "x-ms-version": "2015-04-05",
  "Content-Type": "text/xml;charset=utf-8",
};
/** The devices a provisioning CD shows up as. */
export const provisioningCd = /(sr[0-9]|hd[c-z]|cdrom[0-9]|cd[0-9])/;
// Azure's virtual router for IPv6.
const ipv6Gateway = "fe80::1234:5678:9abc";

const imdsUrl = (path: string, apiVersion: string) => `${azureImds}${path}?api-version=${apiVersion}&format=json`;

/** A 200's body; a 400 is the api-version refused (undefined). */
async function imdsGet(http: MetadataHttp, url: string): Promise<Buffer | undefined> {
  const reply = await http.request(url, { headers: imdsHeaders });
  if (reply.status === 200) return reply.body;
  if (reply.status === 400) return undefined;
  const message = `GET ${url}: status ${reply.status}`;
  if (reply.status >= 500 || reply.status === 429) throw new MetadataUnreachableError(message, { url });
  throw new MetadataError(message, { url, status: reply.status });
}

export interface AzureDocuments {
  compute: unknown;
  interfaces: unknown;
  /** undefined: the instance is behind no load balancer (or it could not be read). */
  loadBalancer?: unknown;
}

export async function fetchAzureDocuments(io: PlatformIo): Promise<AzureDocuments> {
  let compute: Buffer | undefined;
  let apiVersion: string = azureApiVersions[0];
  for (apiVersion of azureApiVersions) {
    compute = await imdsGet(io.http, imdsUrl("instance/compute", apiVersion));
    if (compute) break;
  }
  if (!compute) throw new MetadataError(`${imdsUrl("instance/compute", apiVersion)}: bad request`);
  const interfacesUrl = imdsUrl("instance/network/interface", apiVersion);
  const interfaces = await imdsGet(io.http, interfacesUrl);
  if (!interfaces) throw new MetadataError(`GET ${interfacesUrl}: bad request`);
  let loadBalancer: unknown;
  const lbUrl = imdsUrl("loadbalancer", apiVersion);
  try {
    const body = await getOptional(io.http, lbUrl, { headers: imdsHeaders });
    if (body && body.length > 0) loadBalancer = parseJson(body, "loadbalancer");
  } catch (err) {
    if (err instanceof MetadataError && /malformed JSON/.test(err.message)) throw err;
    io.log.warn("failed to fetch load balancer config from metadata service", { error: describeError(err) });
  }
  return {
    compute: parseJson(compute, "instance/compute"),
    interfaces: parseJson(interfaces, "instance/network/interface"),
    ...(loadBalancer !== undefined ? { loadBalancer } : {}),
  };
}

/** Talos's ParseMetadata and ParseLoadBalancerIP for Azure. */
export function parseAzure(docs: AzureDocuments): PlatformNetworkConfig {
  const c = asObject(docs.compute, "instance/compute");
  const what = "instance/network/interface";
  const config = emptyPlatformNetworkConfig();
  const computerName = str(obj(c, "osProfile", "instance/compute"), "computerName", "instance/compute");
  if (computerName) config.hostnames.push(hostnameSpec(computerName));
  const interfaces = asArray(docs.interfaces, what).map((v) => asObject(v, what));
  const addresses = (iface: Record<string, unknown>, family: "ipv4" | "ipv6") =>
    arr(obj(iface, family, what), "ipAddress", what).map((a) => asObject(a, what));
  const publicIPs: string[] = [];
  for (const iface of interfaces)
    for (const family of ["ipv4", "ipv6"] as const)
      for (const a of addresses(iface, family)) publicIPs.push(str(a, "publicIpAddress", what));
  for (const [i, iface] of interfaces.entries()) {
    // As Talos: the interface's last IPv6 entry decides.
    const last = addresses(iface, "ipv6").at(-1);
    if (!last || (str(last, "publicIpAddress", what) === "" && str(last, "privateIpAddress", what) === "")) continue;
    const link = `eth${i}`;
    config.operators.push(dhcp6Operator(link));
    config.routes.push(staticRoute(link, "inet6", { gateway: ipv6Gateway, priority: 4 * DEFAULT_ROUTE_METRIC }));
  }
  config.externalIPs = validIps(publicIPs);
  if (docs.loadBalancer !== undefined) {
    const lb = obj(asObject(docs.loadBalancer, "loadbalancer"), "loadbalancer", "loadbalancer");
    const frontends = arr(lb, "publicIpAddresses", "loadbalancer").map((v) =>
      str(asObject(v, "loadbalancer"), "frontendIpAddress", "loadbalancer"),
    );
    // IPv6 frontends are written in brackets.
    config.externalIPs.push(
      ...validIps(frontends.map((f) => (f.includes("]") ? f.slice(0, f.indexOf("]")).replace(/^\[/, "") : f))),
    );
  }
  const location = str(c, "location", "instance/compute");
  const zone = str(c, "zone", "instance/compute")
    ? `${location}-${str(c, "zone", "instance/compute")}`
    : str(c, "platformFaultDomain", "instance/compute");
  const resourceId = str(c, "resourceId", "instance/compute");
  const vmSize = str(c, "vmSize", "instance/compute");
  config.metadata = {
    platform: "azure",
    ...(computerName ? { hostname: computerName } : {}),
    ...(location ? { region: location.toLowerCase() } : {}),
    ...(zone ? { zone: zone.toLowerCase() } : {}),
    ...(vmSize ? { instanceType: vmSize } : {}),
    ...(resourceId ? { instanceId: resourceId } : {}),
    providerId: `azure://${resourceId}`,
    ...(str(c, "evictionPolicy", "instance/compute") !== "" ? { spot: true } : {}),
  };
  return config;
}

/** CustomData of an ovf-env.xml, base64-decoded; undefined when it has none. */
export function ovfCustomData(xml: string): Buffer | undefined {
  if (!/<(\w+:)?Environment[\s>]/.test(xml)) throw new MetadataError("ovf-env.xml: not an OVF environment document");
  const section =
    /<(?:\w+:)?LinuxProvisioningConfigurationSet[\s>][\s\S]*?<\/(?:\w+:)?LinuxProvisioningConfigurationSet>/.exec(
      xml,
    )?.[0] ?? "";
  const data = /<(?:\w+:)?CustomData>([^<]*)<\/(?:\w+:)?CustomData>/.exec(section)?.[1]?.trim() ?? "";
  if (data === "") return undefined;
  if (!/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(data)) throw new MetadataError("ovf-env.xml: CustomData is not base64");
  return Buffer.from(data, "base64");
}

/** The Ready health report for the goal state the wire server gives (what the Linux agent posts). */
export function healthReport(goalState: string): string {
  const field = (re: RegExp, name: string) => {
    const v = re.exec(goalState)?.[1];
    if (v === undefined) throw new MetadataError(`goal state: no ${name}`);
    return v.trim();
  };
  const incarnation = field(/<Incarnation>([^<]*)<\/Incarnation>/, "Incarnation");
  const container = field(/<ContainerId>([^<]*)<\/ContainerId>/, "ContainerId");
  const instance = field(/<RoleInstance>[\s\S]*?<InstanceId>([^<]*)<\/InstanceId>/, "RoleInstance InstanceId");
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    '<Health xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema">' +
    `<GoalStateIncarnation>${incarnation}</GoalStateIncarnation>` +
    `<Container><ContainerId>${container}</ContainerId><RoleInstanceList><Role><InstanceId>${instance}</InstanceId><Health><State>Ready</State></Health></Role></RoleInstanceList></Container>` +
    "</Health>"
  );
}

/** Tells the wire server this VM is provisioned and Ready; the goal state is asked for until the wire server answers (Talos's download). */
export async function reportReady(io: PlatformIo): Promise<void> {
  const http = io.http;
  const goalUrl = `${wireServer}/machine/?comp=goalstate`;
  const goal = await retryWhileUnreachable(
    () => getRequired(http, goalUrl, { headers: wireHeaders }),
    io.retry,
    io.signal,
    (attempt, retryInMs, err) =>
      io.log.warn("the Azure wire server is unreachable; retrying", { attempt, retryInMs, error: describeError(err) }),
  );
  const healthUrl = `${wireServer}/machine/?comp=health`;
  const posted = await http.request(healthUrl, {
    method: "POST",
    headers: wireHeaders,
    body: healthReport(goal.toString("utf8")),
  });
  if (posted.status !== 200)
    throw new MetadataError(`POST ${healthUrl}: status ${posted.status}`, { status: posted.status });
}

async function readUserData(io: PlatformIo): Promise<Buffer | undefined> {
  io.log.info("fetching machine config from ovf-env.xml");
  const cd = await io.readDeviceFile(provisioningCd, "udf", "ovf-env.xml");
  return cd ? ovfCustomData(cd.files.get("ovf-env.xml")!.toString("utf8")) : undefined;
}

export const azure: CloudPlatform = {
  name: "azure",
  readNetwork: async (io) => parseAzure(await fetchAzureDocuments(io)),
  readUserData,
  afterUserData: async (io) => {
    try {
      await reportReady(io);
      io.log.info("reported Ready to the Azure wire server");
    } catch (err) {
      io.log.warn("failed to update instance status", { error: describeError(err) });
    }
  },
};
