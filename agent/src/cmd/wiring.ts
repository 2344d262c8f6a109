import { loadConfig } from "../config/load.js";
import { validateConfig } from "../config/validate.js";
import type { ConfigBundle } from "../config/bundle.js";
import type { ConfigChecker } from "../machined/apply/index.js";
import { cosiStateImpl } from "../grpc/cosi-server.js";
import { callRoles } from "../machined/access.js";
import type { CosiFactory } from "../machined/machined.js";
import type { Platform } from "../machined/platform.js";
import { installDiskProblem } from "../storage/disk-selector.js";
import { listDisks } from "../storage/disks.js";
import type { BlockSysfs } from "../sys/block.js";

/** Parses with the config module's loader and validates for the platform's mode, the install disk against `block`'s disks. */
export function configChecker(platform: Platform, block: BlockSysfs): ConfigChecker<ConfigBundle> {
  return {
    parse: (data) => loadConfig(data),
    // Metal needs machine.install naming a disk the install can write (Disks lists it, not read-only).
    validate: (bundle) =>
      validateConfig(bundle, {
        mode: platform.mode,
        installDisk: (install) => installDiskProblem(install, listDisks(block), (p) => block.deviceNode(p)),
      }),
  };
}

/** COSI State handlers for machined: roles are what apid asserted in `talos-role`. */
export function cosiFactory(): CosiFactory {
  return (state) => cosiStateImpl(state, { rolesOf: (call) => callRoles(call.metadata) }) as never;
}
