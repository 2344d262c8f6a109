// The events a node sends its platform while acquiring its configuration, with Talos's types
// and messages, and their delivery. Only a platform with an events endpoint (Equinix Metal)
// sends them. They go out one after another in the order fired, in the background: an endpoint
// that fails or cannot be reached is a log line, never a stop or a wait in the boot.

import { describeError } from "../errors.js";
import type { CloudPlatform, PlatformEvent, PlatformEventIo } from "./platforms/platform.js";

export const configLoadedEvent: PlatformEvent = {
  type: "talos.prov.config.loaded",
  message: "Talos machine config loaded successfully.",
};

/** Maintenance mode counts as activation: the user is expected to interact with the node now. */
export const maintenanceEvent: PlatformEvent = {
  type: "activate",
  message: "Talos booted into maintenance mode. Ready for user interaction.",
};

export function configFailedEvent(error: string): PlatformEvent {
  return { type: "failure", message: "Error loading and validating Talos machine config.", error };
}

export interface PlatformEvents {
  /** Queues `event` behind those fired before it; returns at once. */
  fire(event: PlatformEvent): void;
  /** Resolves once every event fired so far was sent, or failed and was logged. */
  drained(): Promise<void>;
}

export function platformEvents(platform: CloudPlatform | undefined, io: PlatformEventIo): PlatformEvents {
  let last = Promise.resolve();
  const send = platform?.sendEvent;
  return {
    fire(event) {
      if (!send) return;
      last = last.then(() =>
        send(event, io).then(
          () => io.log.info("platform event sent", { platform: platform.name, type: event.type }),
          (err: unknown) =>
            io.log.warn("failed sending event", {
              platform: platform.name,
              type: event.type,
              error: describeError(err),
            }),
        ),
      );
    },
    drained: () => last,
  };
}
