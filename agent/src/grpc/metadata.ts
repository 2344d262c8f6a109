// Metadata keys shared by apid and machined.

/** The caller's roles, asserted by apid (or an impersonating peer). */
export const roleKey = "talos-role";

/**
 * Set by apid on calls it received on its maintenance listener, so machined
 * keeps answering them with maintenance rules while it switches over to normal
 * mode. apid drops it (like talos-role) from what clients send.
 */
export const listenerKey = "basalt-listener";
