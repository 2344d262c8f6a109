import * as grpc from "@grpc/grpc-js";
import { PermissionDeniedError, UnimplementedError } from "../errors.js";
import { isAuthorized, normalizeRoles, Role } from "../grpc/roles.js";

/** Roles of a call on machined's socket: only what apid asserted in `talos-role`. */
export function callRoles(md: grpc.Metadata): string[] {
  return normalizeRoles(md.get("talos-role").map(String));
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

/**
 * What maintenance mode serves (reference §2): apply/generate config, disks and
 * read-only COSI for everyone; Version/Upgrade/Reset/Meta* only for os:admin
 * (SideroLink peers); everything else is not there.
 */
export function maintenanceGuard(path: string, roles: string[]): void {
  const [, service = "", method = ""] = path.split("/");
  if (openInMaintenance.has(path)) return;
  if (service === "machine.MachineService") {
    if (path === "/machine.MachineService/GenerateClientConfiguration") {
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
export function rbacGuard(path: string, roles: string[]): void {
  if (!isAuthorized(path, roles)) throw new PermissionDeniedError("not authorized", { path, roles });
}
