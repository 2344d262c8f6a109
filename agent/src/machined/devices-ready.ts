import {
  DevicesStatusId,
  DevicesStatusType,
  type DevicesStatusSpec,
  RUNTIME_NAMESPACE,
} from "../resources/catalog/runtime.js";
import type { ResourceState } from "../resources/state.js";
import { published } from "./published.js";

/**
 * Resolves true once DevicesStatus `devices` is ready (udevd has named and settled the devices:
 * labels under /dev/disk, final link names), false when `signal` aborts first.
 */
export async function devicesReady(state: ResourceState, signal: AbortSignal): Promise<boolean> {
  return (
    (await published<DevicesStatusSpec>(
      state,
      RUNTIME_NAMESPACE,
      DevicesStatusType,
      DevicesStatusId,
      signal,
      (s) => s.ready,
    )) !== undefined
  );
}
