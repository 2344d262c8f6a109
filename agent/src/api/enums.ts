// Proto enum numbers that code on both sides of the wire (machined, the
// client) compares against. Stated once here; test/unit/api/enums.test.ts
// checks them against the enums loaded from agent/api.

/** machine.ApplyConfigurationRequest.Mode */
export const ApplyMode = { REBOOT: 0, AUTO: 1, NO_REBOOT: 2, STAGED: 3, TRY: 4 } as const;
export type ApplyMode = (typeof ApplyMode)[keyof typeof ApplyMode];

/** The --mode names talosctl uses for each ApplyMode. */
export const applyModeNames: ReadonlyMap<string, ApplyMode> = new Map<string, ApplyMode>([
  ["reboot", ApplyMode.REBOOT],
  ["auto", ApplyMode.AUTO],
  ["no-reboot", ApplyMode.NO_REBOOT],
  ["staged", ApplyMode.STAGED],
  ["try", ApplyMode.TRY],
]);

/** The talosctl name of a mode number; the number itself when it has none. */
export function applyModeName(mode: number): string {
  for (const [name, value] of applyModeNames) if (value === mode) return name;
  return String(mode);
}
