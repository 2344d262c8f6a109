// The OCI runtime spec of a service run as a containerd task, as Talos builds it for system containers
// and extension services: host network, its own pid/ipc/uts/mount namespaces, all capabilities but the
// ones Talos drops, the host's /etc/hosts and /etc/resolv.conf.
import { capabilityNames } from "../../sys/capabilities.js";

export interface OciMount {
  destination: string;
  type?: string;
  source: string;
  options?: string[];
}

export interface ContainerProcessSpec {
  args: string[];
  env: string[];
  /** The container's root directory: a rootfs on the host, or `rootfs` (the bundle's) for an image's snapshot. */
  rootfs: string;
  /** Who the process runs as; unset: root. */
  user?: { uid: number; gid: number; additionalGids?: number[] };
  /** Its working directory; unset: /. */
  cwd?: string;
  /**
   * Exactly these capabilities (among those held); unset: every one but Talos's dropped ones.
   * Talos runs etcd with none (oci.WithDroppedCapabilities(cap.Known())).
   */
  capabilities?: string[];
  readonlyRootfs: boolean;
  mounts: OciMount[];
  /** cgroup path relative to the cgroup root, e.g. `/system/extensions/hello`. */
  cgroupsPath: string;
  /** Unset: the runtime's own score is inherited (lowering it needs CAP_SYS_RESOURCE, which a sandbox may lack). */
  oomScoreAdj?: number;
  /** Host files bind-mounted read-only (Talos: /etc/hosts, /etc/resolv.conf). */
  hostFiles: { hosts?: string; resolvConf?: string };
  /** Every sysfs mount read-write, the service's own too (containerd's WithWriteableSysfs). */
  writeableSysfs?: boolean;
  /** The host's PID namespace (the kubelet sees the processes it accounts for). */
  hostPid?: boolean;
  maskedPaths?: string[];
  readonlyPaths?: string[];
  rootfsPropagation?: string;
  /** The capabilities machined holds (a sandbox may hold fewer than a node); the container gets no others. */
  heldCapabilities: ReadonlySet<string>;
}

/** Talos's DefaultDroppedCapabilities: extension services and system containers get every other one. */
const droppedCapabilities: ReadonlySet<string> = new Set(["CAP_SYS_BOOT", "CAP_SYS_MODULE"]);

/** Every capability but the dropped ones, among those we hold (`held`: our bounding set). */
export function grantableCapabilities(held: ReadonlySet<string>): string[] {
  return capabilityNames.filter((c) => !droppedCapabilities.has(c) && held.has(c));
}

const defaultMaskedPaths = [
  "/proc/acpi",
  "/proc/asound",
  "/proc/kcore",
  "/proc/keys",
  "/proc/latency_stats",
  "/proc/timer_list",
  "/proc/timer_stats",
  "/proc/sched_debug",
  "/sys/firmware",
  "/proc/scsi",
];
const defaultReadonlyPaths = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"];

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** containerd's default PATH unless the environment sets one (an image's config usually does). */
function withDefaultPath(env: string[]): string[] {
  return env.some((e) => e.startsWith("PATH=")) ? env : [defaultPath, ...env];
}

/** containerd's type URL for a JSON-encoded runtime spec in a Container's `spec` Any. */
export const ociSpecTypeUrl = "types.containerd.io/opencontainers/runtime-spec/1/Spec";

export function ociSpec(p: ContainerProcessSpec): Record<string, unknown> {
  const caps = p.capabilities
    ? p.capabilities.filter((c) => p.heldCapabilities.has(c))
    : grantableCapabilities(p.heldCapabilities);
  const mounts: OciMount[] = [
    { destination: "/proc", type: "proc", source: "proc", options: ["nosuid", "noexec", "nodev"] },
    {
      destination: "/dev",
      type: "tmpfs",
      source: "tmpfs",
      options: ["nosuid", "strictatime", "mode=755", "size=65536k"],
    },
    {
      destination: "/dev/pts",
      type: "devpts",
      source: "devpts",
      options: ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"],
    },
    {
      destination: "/dev/shm",
      type: "tmpfs",
      source: "shm",
      options: ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"],
    },
    { destination: "/dev/mqueue", type: "mqueue", source: "mqueue", options: ["nosuid", "noexec", "nodev"] },
    {
      destination: "/sys",
      type: "sysfs",
      source: "sysfs",
      options: ["nosuid", "noexec", "nodev", p.writeableSysfs ? "rw" : "ro"],
    },
    {
      destination: "/run",
      type: "tmpfs",
      source: "tmpfs",
      options: ["nosuid", "strictatime", "mode=755", "size=65536k"],
    },
  ];
  if (p.hostFiles.hosts)
    mounts.push({
      destination: "/etc/hosts",
      type: "bind",
      source: p.hostFiles.hosts,
      options: ["rbind", "rprivate", "ro"],
    });
  if (p.hostFiles.resolvConf)
    mounts.push({
      destination: "/etc/resolv.conf",
      type: "bind",
      source: p.hostFiles.resolvConf,
      options: ["rbind", "rprivate", "ro"],
    });
  mounts.push(
    ...p.mounts.map((m) =>
      p.writeableSysfs && m.type === "sysfs"
        ? { ...m, options: (m.options ?? []).map((o) => (o === "ro" ? "rw" : o)) }
        : m,
    ),
  );
  return {
    ociVersion: "1.0.2-dev",
    process: {
      terminal: false,
      user: {
        uid: p.user?.uid ?? 0,
        gid: p.user?.gid ?? 0,
        ...(p.user?.additionalGids?.length ? { additionalGids: p.user.additionalGids } : {}),
      },
      args: p.args,
      env: withDefaultPath(p.env),
      cwd: p.cwd || "/",
      capabilities: { bounding: caps, effective: caps, permitted: caps },
      rlimits: [{ type: "RLIMIT_NOFILE", hard: 1024, soft: 1024 }],
      noNewPrivileges: true,
      ...(p.oomScoreAdj !== undefined ? { oomScoreAdj: p.oomScoreAdj } : {}),
    },
    root: { path: p.rootfs, readonly: p.readonlyRootfs },
    mounts,
    linux: {
      // Host network (no network namespace), as Talos runs its system containers.
      namespaces: [...(p.hostPid ? [] : [{ type: "pid" }]), { type: "ipc" }, { type: "uts" }, { type: "mount" }],
      cgroupsPath: p.cgroupsPath,
      resources: { devices: [{ allow: true, access: "rwm" }] },
      maskedPaths: p.maskedPaths ?? defaultMaskedPaths,
      readonlyPaths: p.readonlyPaths ?? defaultReadonlyPaths,
      ...(p.rootfsPropagation ? { rootfsPropagation: p.rootfsPropagation } : {}),
    },
  };
}
