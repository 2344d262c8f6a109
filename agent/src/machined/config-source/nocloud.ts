// The nocloud platform's seed (a volume labelled cidata or CIDATA): user-data is the
// machine configuration, meta-data names the host and the instance, as Talos reads them.

import { parse } from "yaml";
import type { PlatformMetadataSpec } from "../../resources/catalog/runtime.js";

export const nocloudLabels = ["cidata", "CIDATA"] as const;
export const nocloudFiles = { userData: "user-data", metaData: "meta-data", networkConfig: "network-config" } as const;

export interface NocloudMetadata {
  hostname?: string;
  localHostname?: string;
  instanceId?: string;
  instanceType?: string;
  providerId?: string;
  region?: string;
  zone?: string;
}

const fields: [keyof NocloudMetadata, string][] = [
  ["hostname", "hostname"],
  ["localHostname", "local-hostname"],
  ["instanceId", "instance-id"],
  ["instanceType", "instance-type"],
  ["providerId", "provider-id"],
  ["region", "region"],
  ["zone", "zone"],
];

function pick(doc: unknown): NocloudMetadata {
  const out: NocloudMetadata = {};
  if (typeof doc !== "object" || doc === null) return out;
  const record = doc as Record<string, unknown>;
  for (const [key, yamlKey] of fields) {
    const v = record[yamlKey];
    if (typeof v === "string" && v !== "") out[key] = v;
    else if (typeof v === "number") out[key] = String(v);
  }
  return out;
}

function parseYaml(text: string): unknown {
  try {
    return parse(text);
  } catch {
    // Talos ignores a meta-data it cannot read.
    return undefined;
  }
}

/**
 * meta-data's fields; without a hostname there, the hostname and local-hostname of the
 * user-data document (Talos's fallback), and a hostname `h=` from SMBIOS wins over both.
 */
export function nocloudMetadata(
  metaData: string | undefined,
  userData: string | undefined,
  smbiosHostname?: string,
): NocloudMetadata {
  const meta = metaData === undefined ? {} : pick(parseYaml(metaData));
  if (smbiosHostname) meta.hostname = smbiosHostname;
  if (!meta.hostname && !meta.localHostname && userData !== undefined) {
    const fallback = pick(parseYaml(userData));
    if (fallback.hostname) meta.hostname = fallback.hostname;
    if (fallback.localHostname) meta.localHostname = fallback.localHostname;
  }
  return meta;
}

/** The PlatformMetadata nocloud publishes: hostname, else local-hostname, as Talos picks it. */
export function nocloudPlatformMetadata(meta: NocloudMetadata): PlatformMetadataSpec {
  const hostname = meta.hostname ?? meta.localHostname;
  return {
    platform: "nocloud",
    ...(hostname ? { hostname } : {}),
    ...(meta.region ? { region: meta.region } : {}),
    ...(meta.zone ? { zone: meta.zone } : {}),
    ...(meta.instanceType ? { instanceType: meta.instanceType } : {}),
    ...(meta.instanceId ? { instanceId: meta.instanceId } : {}),
    ...(meta.providerId ? { providerId: meta.providerId } : {}),
  };
}
