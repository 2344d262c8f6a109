// A resource type's specs as `talosctl get -o yaml` shows them, by id, over the COSI API.
import { parse as parseYaml } from "yaml";
import type { NodeClient } from "../../../agent/src/client/client.js";

type Listed = { resource: { metadata: { id: string }; spec: { yaml_spec: string } } }[];

export async function resourceSpecs(
  client: NodeClient,
  ns: string,
  type: string,
): Promise<Map<string, Record<string, unknown>>> {
  const items = (await client.resourceList(ns, type)) as Listed;
  return new Map(
    items.map((i) => [i.resource.metadata.id, parseYaml(i.resource.spec.yaml_spec) as Record<string, unknown>]),
  );
}
