// The cloud platforms whose metadata the node reads, by talos.platform= name.

import { akamai } from "./akamai.js";
import { aws } from "./aws.js";
import { azure } from "./azure.js";
import { digitalOcean } from "./digitalocean.js";
import { equinixMetal } from "./equinixmetal.js";
import { exoscale } from "./exoscale.js";
import { gcp } from "./gcp.js";
import { hcloud } from "./hcloud.js";
import { opennebula } from "./opennebula.js";
import { openstack } from "./openstack.js";
import { oracle } from "./oracle.js";
import { scaleway } from "./scaleway.js";
import { upcloud } from "./upcloud.js";
import { vmware } from "./vmware.js";
import { vultr } from "./vultr.js";
import type { CloudPlatform } from "./platform.js";

const platforms: readonly CloudPlatform[] = [
  aws,
  gcp,
  openstack,
  digitalOcean,
  hcloud,
  vultr,
  azure,
  oracle,
  scaleway,
  upcloud,
  exoscale,
  akamai,
  equinixMetal,
  opennebula,
  vmware,
];

/** Older names Talos still takes for a platform. */
const aliases: Record<string, string> = { packet: "equinixMetal" };

export function cloudPlatform(name: string): CloudPlatform | undefined {
  const wanted = aliases[name] ?? name;
  return platforms.find((p) => p.name === wanted);
}
