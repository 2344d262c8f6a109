// VMware, read as Talos v1.7 reads it, through the hypervisor's backdoor (vmware-rpci.ts) and
// only with talos.config=guestinfo. The configuration is guestinfo.talos.config, else
// guestinfo.userdata, else the same properties of the OVF environment (guestinfo.ovfenv, as vApp
// options and vCloud Director give it); each base64. guestinfo.metadata (or the OVF property
// metadata) is cloud-init's network configuration version 2 as CAPV writes it: each eth* link up
// with its MTU, DHCPv4/v6, addresses, gateways and resolvers (a link matched by MAC follows the
// node's link with it), the hostname and the instance id.

import { parse as parseYaml } from "yaml";
import type { VmwareBackdoor } from "../../sys/vmware-backdoor.js";
import { DEFAULT_ROUTE_METRIC } from "../../network/config-specs.js";
import {
  dhcp4Operator,
  dhcp6Operator,
  emptyPlatformNetworkConfig,
  hostnameSpec,
  linkUp,
  parseIp,
  parsePrefix,
  PlatformDataError,
  resolvers,
  staticAddress,
  staticRoute,
  type PlatformNetworkConfig,
} from "../../network/platform-config.js";
import { decodeBase64 } from "./base64.js";
import { asObject, bool, type JsonObject, num, obj, str, strings } from "./json-fields.js";
import { MetadataError } from "./metadata-http.js";
import { platformMetadataSpec } from "./metadata-spec.js";
import { nonEmpty, type CloudPlatform, type PlatformIo } from "./platform.js";
import { backdoorAnswers, guestInfo } from "./vmware-rpci.js";

const configKey = "talos.config";
const fallbackConfigKey = "userdata";
const metadataKey = "metadata";
const ovfEnvKey = "ovfenv";
const what = "guestinfo.metadata";

/** The node does not run on VMware (or its backdoor does not answer): there is no guestinfo to read. */
export class NotVmwareError extends MetadataError {}

/** Talos's vmcheck: the CPU names VMware as its hypervisor and the backdoor answers. */
function checkVmware(backdoor: VmwareBackdoor): void {
  const signature = backdoor.hypervisorSignature();
  if (signature !== "VMwareVMware")
    throw new NotVmwareError(
      `not a VMware virtual machine: the CPU's hypervisor signature is ${JSON.stringify(signature)}`,
      { signature },
    );
  if (!backdoorAnswers(backdoor)) throw new NotVmwareError("the VMware backdoor does not answer", { signature });
}

/** A property of the OVF environment document (its PropertySection's `key`/`value`), XML entities decoded. */
export function ovfProperty(xml: string, key: string): string | undefined {
  if (!/<(\w+:)?Environment[\s>]/.test(xml))
    throw new MetadataError("guestinfo.ovfenv: not an OVF environment document");
  const section = /<(?:\w+:)?PropertySection[\s>][\s\S]*?<\/(?:\w+:)?PropertySection>/.exec(xml)?.[0] ?? "";
  for (const element of section.matchAll(/<(?:\w+:)?Property\s([^>]*?)\/?>/g)) {
    const attrs = new Map<string, string>();
    for (const a of (element[1] ?? "").matchAll(/(?:[\w.-]+:)?([\w.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g))
      attrs.set(a[1] ?? "", xmlText(a[2] ?? a[3] ?? ""));
    if (attrs.get("key") === key) return attrs.get("value") ?? "";
  }
  return undefined;
}

function xmlText(s: string): string {
  const named: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
  return s.replace(/&(#x[0-9a-fA-F]+|#\d+|\w+);/g, (whole, ref: string) => {
    if (ref.startsWith("#x")) return String.fromCodePoint(parseInt(ref.slice(2), 16));
    if (ref.startsWith("#")) return String.fromCodePoint(Number(ref.slice(1)));
    return named[ref] ?? whole;
  });
}

/** A base64 guestinfo value decoded; undefined when absent or empty. */
function decoded(value: string | undefined, name: string): Buffer | undefined {
  if (value === undefined || value === "") return undefined;
  const data = decodeBase64(value, name);
  return data.length === 0 ? undefined : data;
}

/** `key` from guestinfo itself, else from the OVF environment's properties. */
function readGuestInfo(backdoor: VmwareBackdoor, keys: readonly string[]): Buffer | undefined {
  for (const key of keys) {
    const data = decoded(guestInfo(backdoor, key), `guestinfo.${key}`);
    if (data) return data;
  }
  const ovfEnv = guestInfo(backdoor, ovfEnvKey);
  if (!ovfEnv) return undefined;
  for (const key of keys) {
    const data = decoded(ovfProperty(ovfEnv, key), `the OVF environment's ${key}`);
    if (data) return data;
  }
  return undefined;
}

function scalarText(o: JsonObject, key: string): string {
  const v = o[key];
  return typeof v === "number" ? String(v) : str(o, key, what);
}

/** One entry of `network.ethernets` into the config, named `name` (the key or its set-name). */
function ethernet(config: PlatformNetworkConfig, name: string, eth: JsonObject, dns: string[]): void {
  const at = `${what}: ethernets.${name}`;
  const mac = str(obj(eth, "match", at), "macaddress", at);
  if (mac !== "") (config.linkMacs ??= {})[name] = mac;
  config.links.push(linkUp(name, num(eth, "mtu", at)));
  const dhcp4Metric = num(obj(eth, "dhcp4-overrides", at), "route-metric", at);
  if (bool(eth, "dhcp4", at)) config.operators.push(dhcp4Operator(name, dhcp4Metric || DEFAULT_ROUTE_METRIC));
  if (bool(eth, "dhcp6", at)) {
    // As Talos has it: the DHCPv6 override applies when a DHCPv4 one is given.
    const dhcp6Metric = num(obj(eth, "dhcp6-overrides", at), "route-metric", at);
    config.operators.push(dhcp6Operator(name, dhcp4Metric !== 0 ? dhcp6Metric : 2 * DEFAULT_ROUTE_METRIC));
  }
  for (const a of strings(eth, "addresses", at)) config.addresses.push(staticAddress(name, parsePrefix(a, at)));
  const gateway4 = str(eth, "gateway4", at);
  if (gateway4 !== "") config.routes.push(staticRoute(name, "inet4", { gateway: parseIp(gateway4, `${at} gateway4`) }));
  const gateway6 = str(eth, "gateway6", at);
  if (gateway6 !== "")
    config.routes.push(
      staticRoute(name, "inet6", { gateway: parseIp(gateway6, `${at} gateway6`), priority: 2 * DEFAULT_ROUTE_METRIC }),
    );
  for (const s of strings(obj(eth, "nameservers", at), "addresses", at)) dns.push(parseIp(s, `${at} nameservers`));
}

/** Talos's ApplyNetworkConfigV2 and the PlatformMetadata it goes with. */
export function parseVmwareMetadata(text: string): PlatformNetworkConfig {
  const doc = asObject(parseYaml(text), what);
  const network = obj(doc, "network", what);
  const version = num(network, "version", what);
  if (version !== 2) throw new PlatformDataError(`${what}: version ${version} is not supported`, { version });
  const config = emptyPlatformNetworkConfig();
  const dns: string[] = [];
  // By key, so that the specs come in one order (Talos walks a Go map).
  for (const [key, value] of Object.entries(obj(network, "ethernets", what)).sort(([a], [b]) => a.localeCompare(b))) {
    const eth = asObject(value, `${what}: ethernets.${key}`);
    const name = str(eth, "set-name", what) || key;
    if (name.startsWith("eth")) ethernet(config, name, eth, dns);
  }
  const hostname = scalarText(doc, "local-hostname");
  if (hostname !== "") config.hostnames.push(hostnameSpec(hostname));
  if (dns.length > 0) config.resolvers.push(resolvers(dns));
  config.metadata = platformMetadataSpec("vmware", { hostname, instanceId: scalarText(doc, "instance-id") });
  return config;
}

/** No network settings: PlatformMetadata names the platform only. */
function nameOnly(): PlatformNetworkConfig {
  return { ...emptyPlatformNetworkConfig(), metadata: { platform: "vmware" } };
}

/** Talos reads guestinfo only when the kernel's talos.config= says so. */
function guestInfoWanted(io: PlatformIo): boolean {
  return io.cmdline.get("talos.config")?.at(-1) === "guestinfo";
}

export const vmware: CloudPlatform = {
  name: "vmware",
  // guestinfo is the hypervisor's: no address is needed to read it.
  local: true,
  async readNetwork(io) {
    try {
      checkVmware(io.vmwareBackdoor);
    } catch (err) {
      // The CPU will not say otherwise later: no guestinfo, only the platform's name.
      if (!(err instanceof NotVmwareError)) throw err;
      io.log.warn(`no VMware guestinfo network: ${err.message}`);
      return nameOnly();
    }
    const metadata = readGuestInfo(io.vmwareBackdoor, [metadataKey]);
    return metadata ? parseVmwareMetadata(metadata.toString("utf8")) : nameOnly();
  },
  async readUserData(io) {
    if (!guestInfoWanted(io)) {
      io.log.info("talos.config= is not guestinfo: the VMware guestinfo is not read");
      return undefined;
    }
    io.log.info("fetching machine config from VMware extraConfig or OVF env");
    checkVmware(io.vmwareBackdoor);
    return nonEmpty(readGuestInfo(io.vmwareBackdoor, [configKey, fallbackConfigKey]));
  },
};
