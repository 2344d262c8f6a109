// Whether a bond in the kernel holds the options its spec asks for. Only the options the
// bond's mode sends are compared: the kernel reports the others with its own defaults,
// which no request can change, so comparing them would rewrite the bond forever.

import { type BondOptions, bondOptionsSent } from "../../sys/net.js";

/** The options (by name) the kernel holds differently from `want`; members: the names of the links enslaved to the bond. */
export function bondOptionsDiffering(
  want: BondOptions,
  have: BondOptions,
  members: readonly string[],
): Array<keyof BondOptions> {
  return bondOptionsSent(want).filter((key) => {
    if (key === "primary") {
      // The kernel names its primary only once that member is enslaved.
      if (want.primary && !have.primary && !members.includes(want.primary)) return false;
      return (want.primary ?? "") !== (have.primary ?? "");
    }
    return expected(want, key) !== have[key];
  });
}

// The kernel keeps delays as whole MII intervals: it rounds a delay down to a multiple of miimon.
function expected(want: BondOptions, key: Exclude<keyof BondOptions, "primary">): number | boolean {
  const v = want[key];
  if ((key === "updelay" || key === "downdelay" || key === "peerNotifyDelay") && want.miimon > 0) {
    return Math.floor(want[key] / want.miimon) * want.miimon;
  }
  return v;
}
