import { existsSync } from "node:fs";
import { loadConfig } from "../config/load.js";
import { validateConfig } from "../config/validate.js";
import type { ConfigBundle } from "../config/bundle.js";
import type { ConfigChecker } from "../machined/apply/index.js";
import { cosiStateImpl } from "../grpc/cosi-server.js";
import { callRoles } from "../machined/access.js";
import type { CosiFactory } from "../machined/machined.js";
import type { Platform } from "../machined/platform.js";

/** Parses with the config module's loader and validates for the platform's mode. */
export function configChecker(platform: Platform): ConfigChecker<ConfigBundle> {
  return {
    parse: (data) => loadConfig(data),
    // Nothing is installed yet (install is a later issue); metal needs machine.install with a disk that exists.
    validate: (bundle) => validateConfig(bundle, { mode: platform.mode, installed: false, diskExists: (p) => existsSync(p) }),
  };
}

/** COSI State handlers for machined: roles are what apid asserted in `talos-role`. */
export function cosiFactory(): CosiFactory {
  return (state) => cosiStateImpl(state, { rolesOf: (call) => callRoles(call.metadata) }) as never;
}
