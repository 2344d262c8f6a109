import * as grpc from "@grpc/grpc-js";
import { PermissionDeniedError, UnimplementedError } from "../errors.js";
import { listenerKey, roleKey } from "../grpc/metadata.js";
import { isAuthorized, normalizeRoles, Role } from "../grpc/roles.js";

/** Roles of a call on machined's socket: only what apid asserted in `talos-role`. */
export function callRoles(md: grpc.Metadata): string[] {
  return normalizeRoles(md.get(roleKey).map(String));
}

const adminOnlyInMaintenance = new Set(["Version", "Upgrade", "Reset", "MetaWrite", "MetaDelete"]);
const openInMaintenance = new Set([
  "/machine.MachineService/ApplyConfiguration",
  "/machine.MachineService/GenerateConfiguration",
  "/storage.StorageService/Disks",
  "/cosi.resource.State/Get",
  "/cosi.resource.State/List",
  "/cosi.resource.State/Watch",
  // Writes are registered and refused by the COSI access policy with PermissionDenied.
  "/cosi.resource.State/Create",
  "/cosi.resource.State/Update",
  "/cosi.resource.State/Destroy",
]);

// Services machined never serves (trustd's lives on :50001): a Go server answers "unknown service".
const neverServed = new Set(["securityapi.SecurityService"]);

function split(path: string): [string, string] {
  const [, service = "", method = ""] = path.split("/");
  return [service, method];
}

/**
 * What maintenance mode serves (reference §2): apply/generate config, disks and
 * read-only COSI for everyone; Version/Upgrade/Reset/Meta* only for os:admin
 * (SideroLink peers); other MachineService methods are unimplemented and the
 * remaining services are not registered at all.
 */
export function maintenanceGuard(path: string, roles: readonly string[]): void {
  const [service, method] = split(path);
  if (openInMaintenance.has(path)) return;
  if (service === "machine.MachineService") {
    if (method === "GenerateClientConfiguration") {
      throw new UnimplementedError("client configuration (talosconfig) can't be generated in the maintenance mode");
    }
    if (adminOnlyInMaintenance.has(method)) {
      if (roles.includes(Role.admin)) return;
      throw new UnimplementedError("API is not implemented in maintenance mode");
    }
    throw new UnimplementedError(`method ${method} not implemented`);
  }
  throw new UnimplementedError(`unknown service ${service}`);
}

/** Normal mode: the method's role table (reference §4.3). */
export function rbacGuard(path: string, roles: readonly string[]): void {
  const [service] = split(path);
  if (neverServed.has(service)) throw new UnimplementedError(`unknown service ${service}`);
  if (!isAuthorized(path, roles)) throw new PermissionDeniedError("not authorized", { path, roles: [...roles] });
}

/** The guard machined runs before every handler. */
export function machinedGuard(inMaintenance: () => boolean) {
  return (path: string, call: { metadata: grpc.Metadata }): void => {
    const roles = callRoles(call.metadata);
    const viaMaintenance = call.metadata.get(listenerKey).map(String).includes("maintenance");
    if (inMaintenance() || viaMaintenance) maintenanceGuard(path, roles);
    else rbacGuard(path, roles);
  };
}
