// PlatformMetadata as Talos marshals it: a field the platform left empty is not there at all.

import type { PlatformMetadataSpec } from "../../resources/catalog/runtime.js";

type Fields = Omit<PlatformMetadataSpec, "platform">;

export function platformMetadataSpec(platform: string, fields: Fields): PlatformMetadataSpec {
  const spec: PlatformMetadataSpec = { platform };
  for (const [key, value] of Object.entries(fields) as [keyof Fields, Fields[keyof Fields]][]) {
    // Object.entries loses the pairing of key and value types; each value is copied back under its own key.
    if (value !== "" && value !== undefined && value !== false) Object.assign(spec, { [key]: value });
  }
  return spec;
}
