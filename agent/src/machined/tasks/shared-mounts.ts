// Mount propagation between machined's mount namespace and the kubelet's container.

import type { MachineRuntime } from "../runtime.js";

/**
 * Makes the root and every mount under it shared, so the mounts made after it (EPHEMERAL, the
 * overlays) are too: the kubelet binds /var/lib/kubelet rshared into its container, and the tmpfs
 * it mounts there for a pod's projected volumes (its service account token) must reach the host,
 * where the CRI's runc binds them into the pod. Talos's init mounts its root shared.
 */
export async function setupSharedFilesystems(r: MachineRuntime): Promise<void> {
  await r.mounter.makeShared(r.paths.root);
}
