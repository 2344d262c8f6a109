// The Upgrade and Rollback calls, and the upgrade work a boot does first: settling the
// previous upgrade's trial and running an upgrade that `upgrade --stage` left for it.

import type { ConfigBundle } from "../../config/bundle.js";
import type { ConfigChecker } from "../apply/check.js";
import type { MachinedMode } from "../apply/config-applier.js";
import { ConflictError, describeError, UnimplementedError } from "../../errors.js";
import { logger } from "../../log.js";
import { rollbackToOtherSlot } from "../../storage/upgrade.js";
import type { UpgradeRequest } from "../apis.js";
import { stagedUpgradeEvent, stagedUpgradeFailedEvent } from "../platform-events.js";
import { ownsDisks, type MachineRuntime } from "../runtime.js";
import type { SequenceRunner } from "../sequence-runner.js";
import { stageUpgradeSequence, upgradeSequence } from "../sequences.js";
import { settleUpgradeAtBoot } from "../upgrade-trial.js";
import {
  bootPartition,
  checkUpgradeRequest,
  pullUpgrade,
  stageUpgrade,
  takeStagedUpgrade,
  type UpgradeOptions,
} from "./upgrade.js";

const log = logger("machined");

export interface UpgradeRequestsOptions {
  runtime: MachineRuntime;
  sequences: SequenceRunner;
  checker: ConfigChecker<ConfigBundle>;
  mode(): MachinedMode;
  activeConfig(): ConfigBundle | undefined;
  /** Reboots the node (a rollback, a failed trial), for the caller `actorId` names. */
  reboot(actorId?: string): void;
  signal: AbortSignal;
}

export interface UpgradeRequests {
  /** Upgrade: checks the request, pulls the installer (or stages it), then runs the upgrade sequence. */
  upgrade(req: UpgradeRequest, actorId: string): Promise<void>;
  /** Rollback: makes the other BOOT slot the default, then reboots. */
  rollback(actorId: string): Promise<void>;
  /** An upgrade left in META 0x06 is settled (confirmed later, or reported failed) before the boot goes on; never fatal. */
  settleAtBoot(): Promise<void>;
  /** upgrade --stage: performed now, with this boot's configuration; false when there was none or its pull failed. */
  runStaged(): Promise<boolean>;
}

export function upgradeRequests(o: UpgradeRequestsOptions): UpgradeRequests {
  const r = o.runtime;
  return {
    upgrade: async (req, actorId) => {
      const image = checkUpgradeRequest(req.image);
      const mode = o.mode();
      if (!ownsDisks(r) || !r.meta || mode === "installing")
        throw new ConflictError("Basalt is not installed", { mode });
      // As Talos's maintenance service: none of the options there.
      if (mode === "maintenance" && (req.preserve || req.stage || req.force))
        throw new UnimplementedError("upgrade --preserve, --stage, and --force are not supported in maintenance mode");
      const opts: UpgradeOptions = {
        image,
        preserve: req.preserve === true,
        force: req.force === true,
        rebootMode: req.reboot_mode === 1 ? "POWERCYCLE" : "DEFAULT",
      };
      log.info("upgrade request received", { ...opts, stage: req.stage === true });
      if (req.stage) {
        await stageUpgrade(r, opts);
        o.sequences.request("stageUpgrade", () => (r.setStage("upgrading"), stageUpgradeSequence(r)), actorId);
        return;
      }
      const pulled = await pullUpgrade(r, image, o.activeConfig());
      o.sequences.request("upgrade", () => (r.setStage("upgrading"), upgradeSequence(r, pulled, opts)), actorId);
    },
    rollback: async (actorId) => {
      if (!ownsDisks(r) || !r.meta) throw new ConflictError("system disk not found");
      await rollbackToOtherSlot(bootPartition(r, "boot-upgrade"), r.meta);
      r.metaChanged();
      o.reboot(actorId);
    },
    settleAtBoot: async () => {
      await settleUpgradeAtBoot(r, { signal: o.signal, rollback: () => o.reboot() }).catch((err: unknown) =>
        log.error("settling the previous upgrade failed", { error: describeError(err) }),
      );
    },
    runStaged: async () => {
      const staged = await takeStagedUpgrade(r);
      if (!staged) return false;
      // The platform hears whether the new slot was written, as Talos tells it of its installer's run.
      let written = false;
      const announce = (rt: MachineRuntime) => {
        written = true;
        rt.platformEvent(stagedUpgradeEvent);
      };
      try {
        const pulled = await pullUpgrade(r, staged.image, o.checker.parse(Buffer.from(r.configText!)));
        r.setStage("upgrading");
        await o.sequences.run("upgrade", upgradeSequence(r, pulled, staged, announce));
        return true;
      } catch (err) {
        if (!written) r.platformEvent(stagedUpgradeFailedEvent(describeError(err)));
        log.error("the staged upgrade failed: booting the installed system", {
          image: staged.image,
          error: describeError(err),
        });
        return false;
      }
    },
  };
}
