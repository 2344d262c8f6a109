// org.freedesktop.login1.Manager as far as the kubelet's node shutdown manager uses it:
// InhibitDelayMaxUSec, Inhibit (an fd per lock) and the PrepareForShutdown signal.

import fs from "node:fs";
import net from "node:net";
// Variant alone: dbus-next's index would load its whole client (connection, introspection XML parser).
import { Variant } from "dbus-next/lib/variant.js";
import { openPipe } from "../../sys/pipe.js";
import { DBusMethodError, type MethodReply } from "./bus.js";
import type { BusMessage } from "./wire.js";

import { INHIBIT_DELAY_MAX_MS, MANAGER_INTERFACE } from "./names.js";

export { INHIBIT_DELAY_MAX_MS, LOGIND_NAME, LOGIND_PATH, MANAGER_INTERFACE } from "./names.js";
const PROPERTIES_INTERFACE = "org.freedesktop.DBus.Properties";
const INTROSPECTABLE_INTERFACE = "org.freedesktop.DBus.Introspectable";

export interface Inhibitor {
  what: string;
  who: string;
  why: string;
  mode: string;
}

const introspection = `<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
<node>
 <interface name="${MANAGER_INTERFACE}">
  <property name="InhibitDelayMaxUSec" type="t" access="read"/>
  <method name="Inhibit">
   <arg name="what" type="s" direction="in"/>
   <arg name="who" type="s" direction="in"/>
   <arg name="why" type="s" direction="in"/>
   <arg name="mode" type="s" direction="in"/>
   <arg type="h" direction="out"/>
  </method>
  <signal name="PrepareForShutdown">
   <arg type="b"/>
  </signal>
 </interface>
 <interface name="${PROPERTIES_INTERFACE}">
  <method name="Get">
   <arg name="interface" type="s" direction="in"/>
   <arg name="property" type="s" direction="in"/>
   <arg name="value" type="v" direction="out"/>
  </method>
  <method name="GetAll">
   <arg name="interface" type="s" direction="in"/>
   <arg name="properties" type="a{sv}" direction="out"/>
  </method>
 </interface>
 <interface name="${INTROSPECTABLE_INTERFACE}">
  <method name="Introspect">
   <arg name="xml" type="s" direction="out"/>
  </method>
 </interface>
</node>
`;

const unknownMethod = (call: BusMessage) =>
  new DBusMethodError(
    "org.freedesktop.DBus.Error.UnknownMethod",
    `No method ${call.member ?? ""} on interface ${call.interface ?? ""}`,
  );

/** The login1 Manager object: hands out inhibitor locks and knows which are still held. */
export class LogindManager {
  private readonly held = new Map<Inhibitor, Promise<void>>();

  constructor(private readonly inhibitDelayMaxMs = INHIBIT_DELAY_MAX_MS) {}

  /** The object's method handler for the bus. */
  readonly handle = (call: BusMessage): MethodReply => {
    const args = call.body ?? [];
    switch (`${call.interface ?? ""}.${call.member ?? ""}`) {
      case `${MANAGER_INTERFACE}.Inhibit`:
        return this.inhibit(args);
      case `${PROPERTIES_INTERFACE}.Get`:
        return { signature: "v", body: [this.property(String(args[0]), String(args[1]))] };
      case `${PROPERTIES_INTERFACE}.GetAll`:
        return { signature: "a{sv}", body: [args[0] === MANAGER_INTERFACE ? this.properties() : {}] };
      case `${INTROSPECTABLE_INTERFACE}.Introspect`:
        return { signature: "s", body: [introspection] };
      default:
        throw unknownMethod(call);
    }
  };

  /** The locks that delay a shutdown, still held. */
  shutdownDelays(): Inhibitor[] {
    return [...this.held.keys()].filter((i) => i.mode === "delay" && i.what.split(":").includes("shutdown"));
  }

  /** Resolves once every lock that delays a shutdown is released (closed by its holder, or its holder gone). */
  async shutdownDelaysReleased(): Promise<void> {
    await Promise.all(this.shutdownDelays().map((i) => this.held.get(i)));
  }

  private properties(): Record<string, Variant> {
    return { InhibitDelayMaxUSec: new Variant("t", BigInt(this.inhibitDelayMaxMs) * 1000n) };
  }

  private property(iface: string, name: string): Variant {
    const value = iface === MANAGER_INTERFACE ? this.properties()[name] : undefined;
    if (!value)
      throw new DBusMethodError("org.freedesktop.DBus.Error.UnknownProperty", `Unknown property ${iface}.${name}`);
    return value;
  }

  /**
   * A lock is the write end of a pipe: the caller gets it, this process keeps only the read end,
   * whose EOF says every copy of the lock is closed.
   */
  private inhibit(args: unknown[]): MethodReply {
    const [what, who, why, mode] = args.map(String);
    if (args.length !== 4 || !what || !who || !why || (mode !== "delay" && mode !== "block")) {
      throw new DBusMethodError(
        "org.freedesktop.DBus.Error.InvalidArgs",
        "Inhibit takes what, who, why and mode (delay or block)",
      );
    }
    const pipe = openPipe();
    const inhibitor: Inhibitor = { what, who, why, mode };
    const readEnd = new net.Socket({ fd: pipe.read, readable: true, writable: false });
    this.held.set(
      inhibitor,
      new Promise<void>((resolve) => {
        const release = () => {
          this.held.delete(inhibitor);
          resolve();
        };
        readEnd.once("close", release);
        readEnd.on("error", () => readEnd.destroy());
        readEnd.resume();
      }),
    );
    return { signature: "h", body: [pipe.write], done: () => fs.closeSync(pipe.write) };
  }
}
