// Service conditions as small composable functions over the resource store and the
// filesystem: resourceExists, pathExists, networkReady, timeSynced (Talos's conditions).

import { access } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import {
  NETWORK_NAMESPACE,
  NetworkStatusId,
  NetworkStatusType,
  type NetworkStatusSpec,
} from "../resources/catalog/network.js";
import { RUNTIME_NAMESPACE, TimeStatusType, type TimeStatusSpec } from "../resources/catalog/runtime.js";
import type { ResourceState } from "../resources/state.js";
import type { Condition } from "./service.js";

/** Holds once the resource exists (and, given `holds`, its spec satisfies it). */
export function resourceExists<S>(
  state: ResourceState,
  namespace: string,
  type: string,
  id: string,
  holds?: (spec: S) => boolean,
  description?: string,
): Condition {
  return {
    description: description ?? `resource ${namespace}/${type}(${id}) to exist`,
    wait: (signal) =>
      new Promise<void>((resolve, reject) => {
        const ac = new AbortController();
        const finish = (err?: unknown) => {
          ac.abort();
          signal.removeEventListener("abort", aborted);
          if (err === undefined) resolve();
          else reject(err);
        };
        const aborted = () => finish(signal.reason);
        if (signal.aborted) return aborted();
        signal.addEventListener("abort", aborted, { once: true });
        // A single-resource watch starts with the resource's current state.
        state.watch<S>({ namespace, type, id }, { signal: ac.signal }, (ev) => {
          if (
            ev.type !== "destroyed" &&
            ev.resource.spec !== undefined &&
            (holds === undefined || holds(ev.resource.spec))
          )
            finish();
        });
      }),
  };
}

/** Holds once `path` exists (polled: it may appear on a filesystem mounted later). */
export function pathExists(path: string, pollMs = 250): Condition {
  return {
    description: `path ${path} to exist`,
    wait: async (signal) => {
      for (;;) {
        signal.throwIfAborted();
        if (
          await access(path).then(
            () => true,
            () => false,
          )
        )
          return;
        await sleep(pollMs, undefined, { signal });
      }
    },
  };
}

export type NetworkReadiness = "address" | "connectivity" | "hostname" | "etc-files";

const networkFields: Record<NetworkReadiness, keyof NetworkStatusSpec> = {
  address: "addressReady",
  connectivity: "connectivityReady",
  hostname: "hostnameReady",
  "etc-files": "etcFilesReady",
};

/** Holds once the network status says every named part is ready. */
export function networkReady(state: ResourceState, ...parts: NetworkReadiness[]): Condition {
  return resourceExists<NetworkStatusSpec>(
    state,
    NETWORK_NAMESPACE,
    NetworkStatusType,
    NetworkStatusId,
    (s) => parts.every((p) => s[networkFields[p]]),
    `network ${parts.join(", ")}`,
  );
}

/** Holds once time is synced (TimeStatus `node`). */
export function timeSynced(state: ResourceState): Condition {
  return resourceExists<TimeStatusSpec>(state, RUNTIME_NAMESPACE, TimeStatusType, "node", (s) => s.synced, "time sync");
}

/** Holds once every condition holds. */
export function allOf(...conditions: Condition[]): Condition {
  return {
    description: conditions.map((c) => c.description).join(", "),
    wait: async (signal) => {
      await Promise.all(conditions.map((c) => c.wait(signal)));
    },
  };
}
