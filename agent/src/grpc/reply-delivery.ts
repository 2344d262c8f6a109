// An apply's reply may travel on an address or route its config changes (Talos #8566).
// apid marks the call it passes on to machined with a token and, once the reply has been
// handed to the caller's connection, reports the token on machined's socket; machined
// holds the network's kernel changes until then.

/** The request metadata key carrying the token (apid sets it; a caller's own value is replaced). */
export const replyDeliveryKey = "basalt-reply-delivery";
/** machined's internal method apid calls with the token (raw UTF-8 request, empty reply); never proxied. */
export const replyDeliveredPath = "/basalt.internal.ReplyDelivery/Delivered";
/** The methods whose replies are tracked. */
export const replyTrackedPaths: ReadonlySet<string> = new Set(["/machine.MachineService/ApplyConfiguration"]);
