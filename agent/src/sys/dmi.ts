import { readFileSync } from "node:fs";
import path from "node:path";

/** The machine's SMBIOS identity as the kernel exports it (empty where the firmware gives none). */
export interface SystemIdentity {
  uuid: string;
  serial: string;
}

export function readSystemIdentity(sysRoot = "/sys"): SystemIdentity {
  const read = (name: string) => {
    try {
      return readFileSync(path.join(sysRoot, "class", "dmi", "id", name), "utf8").trim();
    } catch {
      return "";
    }
  };
  return { uuid: read("product_uuid").toLowerCase(), serial: read("product_serial") };
}
