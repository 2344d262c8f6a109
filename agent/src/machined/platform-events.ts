// The events a node sends its platform (acquiring its configuration, starting services, install,
// staged upgrade, reboot), with Talos's types and messages, and their delivery. Only a platform
// with an events endpoint (Equinix Metal) sends them. They go out one after another in the order
// fired, in the background: an endpoint that fails or cannot be reached is a log line, never a
// stop in the boot, and a reboot waits for them only a little.

import { setTimeout as delay } from "node:timers/promises";
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

/** Every boot with a configuration, as its services start: the user may start troubleshooting now. */
export const servicesStartingEvent: PlatformEvent = {
  type: "activate",
  message: "Talos is ready for user interaction.",
};

export const installedEvent: PlatformEvent = {
  type: "talos.prov.os.installed",
  message: "Talos installed successfully.",
};

export function installFailedEvent(error: string): PlatformEvent {
  return { type: "failure", message: "Talos install failed.", error };
}

/** Only a staged upgrade is announced (Talos sends nothing for one run at once). */
export const stagedUpgradeEvent: PlatformEvent = {
  type: "talos.prov.os.upgraded",
  message: "Talos staged upgrade successful.",
};

export function stagedUpgradeFailedEvent(error: string): PlatformEvent {
  return { type: "failure", message: "Talos staged upgrade failed.", error };
}

/** Before every reboot and kexec (not a shutdown). */
export const rebootedEvent: PlatformEvent = {
  type: "talos.prov.host.rebooted",
  message: "Talos rebooted.",
};

export interface PlatformEvents {
  /** Queues `event` behind those fired before it; returns at once. */
  fire(event: PlatformEvent): void;
  /** Resolves once every event fired so far was sent, or failed and was logged, or after `limitMs`. */
  drained(limitMs?: number): Promise<void>;
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
    drained: (limitMs) =>
      limitMs === undefined ? last : Promise.race([last, delay(limitMs, undefined, { ref: false })]),
  };
}
