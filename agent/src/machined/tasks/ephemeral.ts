// EPHEMERAL at /var, Talos's directories in it, and the overlays that make a few
// read-only root directories writable for Kubernetes and CNI.

import { promises as fs } from "node:fs";
import path from "node:path";
import type { MachineRuntime } from "../runtime.js";
import { growEphemeralFilesystem, growEphemeralPartition } from "./grow.js";
import { mountVolume, unmountVolume } from "./volume.js";

/** Read-only root directories made writable with an overlay whose upper layer lives on EPHEMERAL. */
export const overlayTargets = ["/etc/kubernetes", "/etc/cni", "/usr/libexec/kubernetes", "/opt"];

const varDirectories: [string, number][] = [
  ["log", 0o755],
  ["log/audit", 0o700],
  ["log/containers", 0o700],
  ["log/pods", 0o700],
  ["lib", 0o700],
  ["lib/etcd", 0o700],
  ["lib/kubelet", 0o700],
  ["lib/kubelet/seccomp/profiles", 0o700],
  ["lib/containerd", 0o000 | 0o711],
  ["lib/cni", 0o700],
  ["run", 0o755],
  ["run/lock", 0o700],
  ["mnt", 0o755],
  ["system", 0o700],
  ["system/overlays", 0o700],
];

/** The API server's audit log directory, owned by the user it runs as (Talos's KubernetesAPIServerRunUser). */
const auditLogDirectory = { dir: "log/audit/kube", uid: 65534, gid: 65534 };

export async function mountEphemeralPartition(r: MachineRuntime): Promise<void> {
  await growEphemeralPartition(r);
  await mountVolume(r, "EPHEMERAL", r.paths.var);
  await growEphemeralFilesystem(r);
}

export async function setupVarDirectory(r: MachineRuntime): Promise<void> {
  for (const [dir, mode] of varDirectories) {
    await fs.mkdir(path.join(r.paths.var, dir), { recursive: true, mode });
  }
  const audit = path.join(r.paths.var, auditLogDirectory.dir);
  await fs.mkdir(audit, { recursive: true, mode: 0o700 });
  // Only root can give it away; a sandbox run as another user keeps it.
  if (process.getuid?.() === 0) await fs.chown(audit, auditLogDirectory.uid, auditLogDirectory.gid);
}

const overlayName = (target: string) => target.replace(/^\//, "").replaceAll("/", "-");

export async function mountOverlayFilesystems(r: MachineRuntime): Promise<void> {
  for (const target of overlayTargets) {
    const lower = path.join(r.paths.root, target);
    const base = path.join(r.paths.var, "system", "overlays", overlayName(target));
    if (r.mounter.list().some((m) => m.target === lower && m.fstype === "overlay")) continue; // a restarted machined's
    await fs.mkdir(`${base}-diff`, { recursive: true, mode: 0o755 });
    await fs.mkdir(`${base}-workdir`, { recursive: true, mode: 0o755 });
    await r.mounter.mount("overlay", lower, "overlay", [
      `lowerdir=${lower}`,
      `upperdir=${base}-diff`,
      `workdir=${base}-workdir`,
    ]);
  }
}

export async function unmountOverlayFilesystems(r: MachineRuntime): Promise<void> {
  for (const target of [...overlayTargets].reverse()) {
    const mounted = r.mounter
      .list()
      .some((m) => m.target === path.join(r.paths.root, target) && m.fstype === "overlay");
    if (mounted) await r.mounter.unmount(path.join(r.paths.root, target));
  }
}

/**
 * Every mount below /var: the volumes the kubelet mounted for its pods (service account tokens, secrets,
 * emptyDirs) outlive the stopped kubelet and keep EPHEMERAL busy. Deepest first, since a mount holding
 * another cannot go before it (Talos walks the table in order); one already gone with its parent is skipped.
 */
export async function unmountPodMounts(r: MachineRuntime): Promise<void> {
  const below = (target: string) => target.startsWith(`${r.paths.var}/`);
  for (const { target } of r.mounter
    .list()
    .filter((m) => below(m.target))
    .reverse()) {
    try {
      await r.mounter.unmount(target);
    } catch (err) {
      if (r.mounter.list().some((m) => m.target === target)) throw err;
    }
  }
}

export async function unmountEphemeralPartition(r: MachineRuntime): Promise<void> {
  await unmountVolume(r, "EPHEMERAL");
}
