// Where each talos.config URL variable comes from, as Talos takes them: SMBIOS for uuid and
// serial, the first physical link's address, the current hostname, META key 0x0b for code.

import { NotFoundError } from "../../errors.js";
import {
  HostnameStatusId,
  HostnameStatusType,
  LinkStatusType,
  type LinkStatusSpec,
} from "../../resources/catalog/network.js";
import type { ResourceState } from "../../resources/state.js";
import type { SystemIdentity } from "../../sys/dmi.js";
import type { UrlValues, UrlVariable } from "./url.js";

/** META tag holding ${code} (Talos's meta.DownloadURLCode). */
export const downloadUrlCodeTag = 0x0b;

export interface UrlValueSources {
  state: ResourceState;
  identity(): SystemIdentity;
  /** The value of a META key, undefined when unset or there is no META. */
  meta(tag: number): string | undefined;
}

/** The first physical Ethernet link (by name, as Talos's HardwareAddr "first"): not loopback, not a virtual kind. */
export function firstHardwareAddr(state: ResourceState): string | undefined {
  const links = state
    .list<LinkStatusSpec>("network", LinkStatusType)
    .filter((l) => l.spec.type === "ether" && l.spec.kind === "" && l.spec.hardwareAddr !== "")
    .sort((a, b) => a.metadata.id.localeCompare(b.metadata.id));
  return links[0]?.spec.hardwareAddr;
}

/** The values of `used`; throws NotFoundError while a link or hostname is not known yet (the caller retries). */
export function urlValues(used: readonly UrlVariable[], src: UrlValueSources): UrlValues {
  const values: UrlValues = {};
  const pending: string[] = [];
  for (const v of used) {
    switch (v) {
      case "uuid":
      case "serial":
        values[v] = src.identity()[v];
        break;
      case "mac": {
        const mac = firstHardwareAddr(src.state);
        if (mac === undefined) pending.push(v);
        else values.mac = mac;
        break;
      }
      case "hostname": {
        const hostname = src.state.get<{ hostname: string }>("network", HostnameStatusType, HostnameStatusId)?.spec
          .hostname;
        if (hostname === undefined) pending.push(v);
        else values.hostname = hostname;
        break;
      }
      case "code":
        values.code = src.meta(downloadUrlCodeTag) ?? "";
        break;
    }
  }
  if (pending.length > 0) throw new NotFoundError(`waiting for URL variables: ${pending.join(", ")}`, { pending });
  return values;
}
