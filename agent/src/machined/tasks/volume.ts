import { NotFoundError } from "../../errors.js";
import { logger } from "../../log.js";
import { mountSystemVolume, type VolumeName } from "../../storage/volumes.js";
import type { MachineRuntime } from "../runtime.js";

const log = logger("machined");

/** Mounts a system volume of the system disk (formatting it when blank) and publishes its MountStatus. */
export async function mountVolume(r: MachineRuntime, name: VolumeName, target: string): Promise<void> {
  const dev = r.systemDisk?.partitions[name];
  if (!dev) throw new NotFoundError(`the system disk has no ${name} partition`, { disk: r.systemDisk?.disk });
  const volume = await mountSystemVolume(name, dev, target, r.mounter, log);
  r.volumes.set(name, volume);
  r.mountsChanged();
}

export async function unmountVolume(r: MachineRuntime, name: VolumeName): Promise<void> {
  const volume = r.volumes.get(name);
  if (!volume) return;
  await r.mounter.unmount(volume.target);
  r.volumes.delete(name);
  r.mountsChanged();
}
