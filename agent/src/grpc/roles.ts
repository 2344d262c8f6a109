// Roles and the method -> roles table of the Talos v1.7 API (reference §4).

export const Role = {
  admin: "os:admin",
  operator: "os:operator",
  reader: "os:reader",
  etcdBackup: "os:etcd:backup",
  impersonator: "os:impersonator",
} as const;

export const allRoles: readonly string[] = Object.values(Role);

const admin = [Role.admin];
const operator = [Role.admin, Role.operator];
const reader = [Role.admin, Role.operator, Role.reader];

const byMethod = new Map<string, readonly string[]>();
function allow(roles: readonly string[], service: string, methods: string[]): void {
  for (const m of methods) byMethod.set(`/${service}/${m}`, roles);
}

allow(admin, "machine.MachineService", [
  "ApplyConfiguration",
  "Bootstrap",
  "Copy",
  "EtcdForfeitLeadership",
  "EtcdLeaveCluster",
  "EtcdRecover",
  "EtcdRemoveMemberByID",
  "GenerateClientConfiguration",
  "GenerateConfiguration",
  "Kubeconfig",
  "MetaWrite",
  "MetaDelete",
  "Read",
  "Reset",
  "Rollback",
  "Upgrade",
]);
allow(admin, "cosi.resource.State", ["Create", "Update", "Destroy"]);
allow(operator, "machine.MachineService", [
  "EtcdAlarmList",
  "EtcdAlarmDisarm",
  "EtcdDefragment",
  "EtcdStatus",
  "ImagePull",
  "PacketCapture",
  "Reboot",
  "Restart",
  "ServiceRestart",
  "ServiceStart",
  "ServiceStop",
  "Shutdown",
]);
allow([Role.admin, Role.operator, Role.etcdBackup], "machine.MachineService", ["EtcdSnapshot"]);
allow(reader, "cluster.ClusterService", ["HealthCheck"]);
allow(reader, "inspect.InspectService", ["ControllerRuntimeDependencies"]);
allow(reader, "machine.MachineService", [
  "CPUInfo",
  "Containers",
  "DiskStats",
  "DiskUsage",
  "Dmesg",
  "EtcdMemberList",
  "Events",
  "Hostname",
  "ImageList",
  "List",
  "LoadAvg",
  "Logs",
  "LogsContainers",
  "Memory",
  "Mounts",
  "NetworkDeviceStats",
  "Netstat",
  "Processes",
  "ServiceList",
  "Stats",
  "SystemStat",
  "Version",
]);
allow(reader, "storage.StorageService", ["Disks"]);
allow(reader, "time.TimeService", ["Time", "TimeCheck"]);
allow(reader, "cosi.resource.State", ["Get", "List", "Watch"]);

/** Roles allowed to call a method path; methods missing from the table need os:admin. */
export function rolesFor(path: string): readonly string[] {
  return byMethod.get(path) ?? admin;
}

export function isAuthorized(path: string, roles: readonly string[]): boolean {
  const allowed = rolesFor(path);
  return roles.some((r) => allowed.includes(r));
}

/** Splits role strings as carried in metadata or certificate O= values; empty strings are ignored. */
export function normalizeRoles(values: readonly string[]): string[] {
  const out: string[] = [];
  for (const v of values) {
    for (const part of v.split(",")) {
      const r = part.trim();
      if (r !== "" && !out.includes(r)) out.push(r);
    }
  }
  return out;
}
