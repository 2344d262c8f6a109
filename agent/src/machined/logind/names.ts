// login1's bus name, object and interface, and the delay it advertises: what machined needs of logind before
// the bus starts, apart from the modules that load dbus-next.

export const LOGIND_NAME = "org.freedesktop.login1";
export const LOGIND_PATH = "/org/freedesktop/login1";
export const MANAGER_INTERFACE = "org.freedesktop.login1.Manager";

/** Talos's InhibitMaxDelay: 40 × the kubelet's shutdown grace period (30 s), 20 minutes. */
export const INHIBIT_DELAY_MAX_MS = 40 * 30_000;
