// AWS EC2: the instance metadata service (IMDS) at 169.254.169.254, read as Talos v1.7
// reads it through the AWS SDK: an IMDSv2 session token first (PUT /latest/api/token),
// sent with every GET; a service without the token API (403, 404, 405) is read as IMDSv1.
// Hostname, instance id/type/lifecycle, public IPv4/IPv6 and placement make the
// PlatformMetadata and the external addresses; /latest/user-data is the configuration.

import {
  emptyPlatformNetworkConfig,
  hostnameSpec,
  validIps,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { getOptional, MetadataError, MetadataUnreachableError, type MetadataHttp } from "./metadata-http.js";
import { nonEmpty, type CloudPlatform, type PlatformIo } from "./platform.js";

export const awsEndpoint = "http://169.254.169.254";
const tokenTtlHeader = "X-aws-ec2-metadata-token-ttl-seconds";
const tokenHeader = "X-aws-ec2-metadata-token";
// The SDK's default token lifetime.
const tokenTtlSeconds = "300";

/** The metadata keys Talos reads, by the field they fill. */
export const awsMetadataKeys = {
  hostname: "hostname",
  instanceType: "instance-type",
  instanceLifeCycle: "instance-life-cycle",
  instanceId: "instance-id",
  publicIPv4: "public-ipv4",
  publicIPv6: "ipv6",
  region: "placement/region",
  zone: "placement/availability-zone",
} as const;

export type AwsMetadata = Record<keyof typeof awsMetadataKeys, string>;

/** An IMDSv2 token; undefined where the service has no token API (IMDSv1 only). */
async function sessionToken(http: MetadataHttp): Promise<string | undefined> {
  const url = `${awsEndpoint}/latest/api/token`;
  const reply = await http.request(url, { method: "PUT", headers: { [tokenTtlHeader]: tokenTtlSeconds } });
  if (reply.status === 200) return reply.body.toString("utf8").trim();
  if (reply.status === 403 || reply.status === 404 || reply.status === 405) return undefined;
  const message = `PUT ${url}: status ${reply.status}`;
  if (reply.status >= 500 || reply.status === 429)
    throw new MetadataUnreachableError(message, { url, status: reply.status });
  throw new MetadataError(message, { url, status: reply.status });
}

/** GETs under /latest with the session's token; one refusal of the token (401) gets a new one. */
function imdsReader(http: MetadataHttp): (path: string) => Promise<Buffer | undefined> {
  let token: Promise<string | undefined> | undefined;
  return async (path) => {
    for (let attempt = 0; ; attempt++) {
      token ??= sessionToken(http);
      const t = await token;
      const url = `${awsEndpoint}/latest/${path}`;
      const reply = await http.request(url, { headers: t ? { [tokenHeader]: t } : {} });
      if (reply.status === 401 && attempt === 0) {
        token = undefined;
        continue;
      }
      return getOptional({ request: async () => reply }, url);
    }
  };
}

export async function fetchAwsMetadata(http: MetadataHttp): Promise<AwsMetadata> {
  const get = imdsReader(http);
  const value = async (key: string) => (await get(`meta-data/${key}`))?.toString("utf8") ?? "";
  const k = awsMetadataKeys;
  // One request at a time, in Talos's order.
  return {
    hostname: await value(k.hostname),
    instanceType: await value(k.instanceType),
    instanceLifeCycle: await value(k.instanceLifeCycle),
    instanceId: await value(k.instanceId),
    publicIPv4: await value(k.publicIPv4),
    publicIPv6: await value(k.publicIPv6),
    region: await value(k.region),
    zone: await value(k.zone),
  };
}

/** Talos's ParseMetadata for AWS: hostname, external IPs and PlatformMetadata. */
export function parseAwsMetadata(m: AwsMetadata): PlatformNetworkConfig {
  const config = emptyPlatformNetworkConfig();
  if (m.hostname) config.hostnames.push(hostnameSpec(m.hostname));
  config.externalIPs = validIps([m.publicIPv4, m.publicIPv6]);
  config.metadata = {
    platform: "aws",
    ...(m.hostname ? { hostname: m.hostname } : {}),
    ...(m.region ? { region: m.region } : {}),
    ...(m.zone ? { zone: m.zone } : {}),
    ...(m.instanceType ? { instanceType: m.instanceType } : {}),
    ...(m.instanceId ? { instanceId: m.instanceId } : {}),
    providerId: `aws:///${m.zone}/${m.instanceId}`,
    ...(m.instanceLifeCycle === "spot" ? { spot: true } : {}),
  };
  return config;
}

export const aws: CloudPlatform = {
  name: "aws",
  readNetwork: async (io: PlatformIo) => parseAwsMetadata(await fetchAwsMetadata(io.http)),
  readUserData: async (io: PlatformIo) => nonEmpty(await imdsReader(io.http)("user-data")),
};
