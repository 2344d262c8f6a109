// The A/B decisions of an upgrade, as pure functions of grub.cfg's slots and META's
// upgrade tag (0x06, the label the node upgraded from):
//   upgrade:  the new system goes into the other slot (dropped from grub.cfg while it is
//             written); grub.cfg's default stays the running (last good) slot and grubenv
//             asks GRUB to boot the new one once;
//   boot:     in the new slot with 0x06 set, the upgrade is on trial until Running and
//             ready, then confirmed (default = new, fallback = old, 0x06 deleted);
//             back in the 0x06 slot, the trial failed: say so and delete 0x06;
//   rollback: the default becomes the other slot.

import { ConflictError } from "../errors.js";
import { entryTitle, type BootLabel, type BootSlots, type GrubEntry } from "./bootloader/grub.js";

export function otherLabel(label: BootLabel): BootLabel {
  return label === "A" ? "B" : "A";
}

/** The slot this boot came from: GRUB's BOOT_IMAGE (and ours on a kexec) is /<label>/vmlinuz. */
export function bootedLabel(cmdline: Map<string, string[]>): BootLabel | undefined {
  const image = cmdline.get("BOOT_IMAGE")?.at(-1);
  return (image ? /\/(A|B)\/vmlinuz$/.exec(image)?.[1] : undefined) as BootLabel | undefined;
}

export interface UpgradePlan {
  /** The slot the new kernel and initramfs are written to. */
  target: BootLabel;
  /** Stored in META 0x06. */
  previous: BootLabel;
  slots: BootSlots;
  /** grubenv's one-time entry: the new slot's title. */
  nextEntry: string;
}

export function planUpgrade(current: BootSlots, entry: GrubEntry): UpgradePlan {
  const previous = current.default;
  const target = otherLabel(previous);
  return {
    target,
    previous,
    // The target is the fallback only while on trial: if its files are unreadable GRUB still ends in the default.
    slots: {
      default: previous,
      fallback: target,
      entries: { [previous]: current.entries[previous]!, [target]: entry },
    },
    nextEntry: entryTitle(target, entry.version),
  };
}

export type BootVerdict =
  | { kind: "normal" }
  /** The new slot booted: confirm once Running and ready. */
  | { kind: "trial"; booted: BootLabel; previous: BootLabel }
  /** The node is back in the slot it upgraded from: the new one failed. */
  | { kind: "failed"; booted: BootLabel; failedSlot: BootLabel };

export function judgeBoot(upgradeTag: string | undefined, booted: BootLabel | undefined): BootVerdict {
  if (upgradeTag !== "A" && upgradeTag !== "B") return { kind: "normal" };
  if (booted === undefined) return { kind: "normal" };
  if (booted === upgradeTag) return { kind: "failed", booted, failedSlot: otherLabel(booted) };
  return { kind: "trial", booted, previous: upgradeTag };
}

/** grub.cfg once the new slot proved itself: it is the default, the old one its fallback. */
export function confirmSlots(slots: BootSlots, booted: BootLabel): BootSlots {
  const previous = otherLabel(booted);
  if (!slots.entries[booted])
    throw new ConflictError(`grub.cfg has no entry for the booted slot ${booted}`, { booted });
  return { default: booted, ...(slots.entries[previous] ? { fallback: previous } : {}), entries: slots.entries };
}

/**
 * grub.cfg while `label`'s files are rewritten: without that slot, so that a power loss in the
 * middle leaves GRUB (and Rollback) nothing half-written to boot.
 */
export function withoutSlot(slots: BootSlots, label: BootLabel): BootSlots {
  if (slots.default === label)
    throw new ConflictError(`slot ${label} is GRUB's default: it cannot be rewritten`, { label });
  const { [label]: _dropped, ...entries } = slots.entries;
  return {
    default: slots.default,
    ...(slots.fallback && slots.fallback !== label ? { fallback: slots.fallback } : {}),
    entries,
  };
}

/** grub.cfg after a failed trial: the slot that booted stays the default, with no fallback to the failed one. */
export function abandonSlots(slots: BootSlots, booted: BootLabel): BootSlots {
  return { default: booted, entries: { [booted]: slots.entries[booted]! } };
}

/** The Rollback RPC: the other slot becomes the default, the current one its fallback. */
export function rollbackSlots(slots: BootSlots): BootSlots {
  const target = otherLabel(slots.default);
  if (!slots.entries[target])
    throw new ConflictError(
      `cannot roll back: BOOT has no slot ${target} (never upgraded, or its upgrade failed or was cut short)`,
      { target },
    );
  return { default: target, fallback: slots.default, entries: slots.entries };
}
