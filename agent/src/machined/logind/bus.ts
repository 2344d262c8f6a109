// A system bus with one service behind it, in machined: the kubelet's node shutdown manager
// is its only client, as in Talos, whose own broker stands in for dbus-daemon. The bus answers
// org.freedesktop.DBus itself and hands every other call to the service's objects.

import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { BasaltError, describeError } from "../../errors.js";
import { logger } from "../../log.js";
import { FdSocketWriter } from "../../sys/fd-socket.js";
import { encodeMessage, MessageReader, MessageType, NO_REPLY_EXPECTED, SaslServer, type BusMessage } from "./wire.js";

const log = logger("logind");

/** A method call failed with a D-Bus error name (`org.freedesktop.DBus.Error.*`); the caller gets it as an error reply. */
export class DBusMethodError extends BasaltError {
  constructor(
    readonly errorName: string,
    message: string,
  ) {
    super(message, { errorName });
  }
}

/** The bus could not listen on its socket. */
export class SystemBusError extends BasaltError {}

export interface Signal {
  path: string;
  interface: string;
  member: string;
  body: unknown[];
}

export interface MethodReply {
  signature?: string;
  body?: unknown[];
  /** Runs once the reply left or could not: the fds it carried can be closed then. */
  done?: () => void;
}

/** Answers the method calls addressed to one object path (throws DBusMethodError). */
export type MethodHandler = (call: BusMessage) => MethodReply;

/** The one service on the bus: its well-known name and its objects by path. */
export interface BusService {
  name: string;
  objects: ReadonlyMap<string, MethodHandler>;
}

const BUS_NAME = "org.freedesktop.DBus";
/** The service's unique name: it is the bus's first connection. */
const SERVICE_UNIQUE = ":1.0";

export class SystemBus {
  private server: net.Server | undefined;
  private readonly connections = new Set<BusConnection>();
  private nextId = 1;

  constructor(private readonly service: BusService) {}

  /** Listens on `socketPath` (a stale socket there is replaced), reachable by root alone. */
  async listen(socketPath: string): Promise<void> {
    fs.mkdirSync(path.dirname(socketPath), { recursive: true, mode: 0o755 });
    fs.rmSync(socketPath, { force: true });
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("listening", () => resolve());
      server.once("error", (err) =>
        reject(new SystemBusError(`listening on ${socketPath} failed`, { socketPath }, { cause: err })),
      );
      server.listen({ path: socketPath });
    });
    fs.chmodSync(socketPath, 0o600);
    server.on("error", (err) => log.error("system bus socket failed", { error: describeError(err) }));
    server.on("connection", (socket) => this.connections.add(new BusConnection(socket, `:1.${this.nextId++}`, this)));
    this.server = server;
  }

  close(): void {
    this.server?.close();
    this.server = undefined;
    for (const c of this.connections) c.close();
    this.connections.clear();
  }

  /** Sends a signal from the service to every client whose match rules take it. */
  emitSignal(signal: Signal & { signature: string }): void {
    const senders = [this.service.name, SERVICE_UNIQUE];
    for (const c of this.connections)
      if (c.wants(signal, senders)) c.send({ type: MessageType.signal, serial: 0, sender: SERVICE_UNIQUE, ...signal });
  }

  forget(c: BusConnection): void {
    this.connections.delete(c);
  }

  /** The reply to a call, with the name it comes from; throws DBusMethodError for a call nobody here answers. */
  dispatch(c: BusConnection, call: BusMessage): MethodReply & { sender: string } {
    if (call.destination === BUS_NAME) return { ...this.busMethod(c, call), sender: BUS_NAME };
    if (call.destination !== this.service.name && call.destination !== SERVICE_UNIQUE) {
      throw new DBusMethodError(
        "org.freedesktop.DBus.Error.ServiceUnknown",
        `The name ${call.destination ?? "(none)"} was not provided by any .service files`,
      );
    }
    const handler = this.service.objects.get(call.path ?? "");
    if (!handler)
      throw new DBusMethodError("org.freedesktop.DBus.Error.UnknownObject", `Unknown object '${call.path ?? ""}'`);
    return { ...handler(call), sender: SERVICE_UNIQUE };
  }

  private busMethod(c: BusConnection, call: BusMessage): MethodReply {
    const args = call.body ?? [];
    const owner = (name: unknown) =>
      name === BUS_NAME ? BUS_NAME : name === this.service.name || name === SERVICE_UNIQUE ? SERVICE_UNIQUE : undefined;
    switch (call.member) {
      case "Hello":
        return { signature: "s", body: [c.uniqueName] };
      case "AddMatch":
        c.addMatch(String(args[0]));
        return {};
      case "RemoveMatch":
        c.removeMatch(String(args[0]));
        return {};
      case "GetNameOwner": {
        const found = owner(args[0]);
        if (!found)
          throw new DBusMethodError(
            "org.freedesktop.DBus.Error.NameHasNoOwner",
            `Could not get owner of name '${String(args[0])}': no such name`,
          );
        return { signature: "s", body: [found] };
      }
      case "NameHasOwner":
        return { signature: "b", body: [owner(args[0]) !== undefined] };
      case "ListNames":
        return { signature: "as", body: [[BUS_NAME, this.service.name, SERVICE_UNIQUE]] };
      default:
        throw new DBusMethodError(
          "org.freedesktop.DBus.Error.UnknownMethod",
          `${BUS_NAME} has no method ${call.member ?? ""} here`,
        );
    }
  }
}

/** One client's connection: SASL, then messages; method calls answered in order. */
class BusConnection {
  private sasl: SaslServer | undefined = new SaslServer();
  private readonly reader = new MessageReader();
  private readonly matches: string[] = [];
  private readonly writer: FdSocketWriter;
  private serial = 1;
  private closed = false;

  constructor(
    private readonly socket: net.Socket,
    readonly uniqueName: string,
    private readonly bus: SystemBus,
  ) {
    this.writer = new FdSocketWriter(socket);
    // No call of this bus takes an fd, and none a client sends reaches this process: Node reads the
    // socket with read(2), without a control buffer, and the kernel closes them (sys/fd-socket.ts).
    socket.on("data", (bytes: Buffer) => this.receiveOrDrop(bytes));
    socket.on("end", () => this.close());
    socket.on("close", () => this.close());
    socket.on("error", (err) => {
      log.warn("system bus client failed", { client: uniqueName, error: describeError(err) });
      this.close();
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.bus.forget(this);
    this.socket.destroy();
  }

  addMatch(rule: string): void {
    this.matches.push(rule);
  }

  removeMatch(rule: string): void {
    const i = this.matches.indexOf(rule);
    if (i < 0)
      throw new DBusMethodError(
        "org.freedesktop.DBus.Error.MatchRuleNotFound",
        "The given match rule wasn't found and can't be removed",
      );
    this.matches.splice(i, 1);
  }

  wants(signal: Signal, senders: readonly string[]): boolean {
    return this.matches.some((rule) => matchRule(rule, signal, senders));
  }

  send(msg: BusMessage, done?: () => void): void {
    if (this.closed) {
      done?.();
      return;
    }
    let encoded: { data: Buffer; fds: number[] };
    try {
      encoded = encodeMessage({ ...msg, serial: this.serial++ });
    } catch (err) {
      done?.();
      throw err;
    }
    this.writer.write(encoded.data, encoded.fds, (err) => {
      if (err)
        log.warn("writing to a system bus client failed", { client: this.uniqueName, error: describeError(err) });
      done?.();
    });
  }

  private receiveOrDrop(bytes: Buffer): void {
    if (this.closed) return;
    try {
      this.receive(bytes);
    } catch (err) {
      log.warn("dropping a system bus client", { client: this.uniqueName, error: describeError(err) });
      this.close();
    }
  }

  private receive(bytes: Buffer): void {
    if (this.sasl) {
      const { replies, rest } = this.sasl.push(bytes);
      for (const line of replies) this.writer.write(Buffer.from(line, "latin1"), []);
      if (!rest) return;
      this.sasl = undefined;
      bytes = rest;
    }
    for (const msg of this.reader.push(bytes)) this.handle(msg);
  }

  private handle(call: BusMessage): void {
    if (call.type !== MessageType.methodCall) return;
    const wantsReply = ((call.flags ?? 0) & NO_REPLY_EXPECTED) === 0;
    const reply = { destination: this.uniqueName, replySerial: call.serial, serial: 0 };
    try {
      const { sender, signature, body, done } = this.bus.dispatch(this, call);
      if (!wantsReply) return done?.();
      this.send({ ...reply, type: MessageType.methodReturn, sender, ...(signature ? { signature, body } : {}) }, done);
    } catch (err) {
      // Anything but a D-Bus error is ours (a pipe that could not open): the caller gets Failed, as from logind.
      if (!(err instanceof DBusMethodError))
        log.error("a system bus call failed", { member: call.member, error: describeError(err) });
      const [errorName, message] =
        err instanceof DBusMethodError
          ? [err.errorName, err.message]
          : ["org.freedesktop.DBus.Error.Failed", describeError(err)];
      if (wantsReply)
        this.send({
          ...reply,
          type: MessageType.error,
          sender: call.destination ?? BUS_NAME,
          errorName,
          signature: "s",
          body: [message],
        });
    }
  }
}

/**
 * A match rule (`type='signal',interface='…',member='…'`) against a signal that `senders` name.
 * Keys that cannot tell signals of one service apart (eavesdrop, destination) match.
 */
export function matchRule(rule: string, signal: Signal, senders: readonly string[]): boolean {
  for (const m of rule.matchAll(/([a-z0-9_]+)='((?:[^']|'\\'')*)'/gi)) {
    const [, key = "", value = ""] = m;
    const argN = /^arg(\d+)$/.exec(key);
    const ok =
      key === "type"
        ? value === "signal"
        : key === "sender"
          ? senders.includes(value)
          : key === "interface"
            ? value === signal.interface
            : key === "member"
              ? value === signal.member
              : key === "path"
                ? value === signal.path
                : key === "path_namespace"
                  ? signal.path === value || signal.path.startsWith(`${value}/`)
                  : argN
                    ? signal.body[Number(argN[1])] === value
                    : true;
    if (!ok) return false;
  }
  return true;
}
