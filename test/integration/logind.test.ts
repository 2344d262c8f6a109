// The system bus and login1 as the kubelet's node shutdown manager uses them, on a socket in a
// temporary directory: clients on dbus-next and on godbus (the kubelet's library) read
// InhibitDelayMaxUSec, take a shutdown delay lock (a real fd), and see PrepareForShutdown(true)
// from the shutdown hook, which returns only once the lock is closed, or at its timeout.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import dbus from "dbus-next";
import { Logind } from "../../agent/src/machined/logind/service.js";
import { encodeMessage, MessageReader, MessageType, type BusMessage } from "../../agent/src/machined/logind/wire.js";
import { FdSocketWriter } from "../../agent/src/sys/fd-socket.js";
import { openPipe } from "../../agent/src/sys/pipe.js";
import {
  INHIBIT_DELAY_MAX_MS,
  LOGIND_NAME,
  LOGIND_PATH,
  MANAGER_INTERFACE,
} from "../../agent/src/machined/logind/manager.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const KUBELET_INHIBIT = ["shutdown", "kubelet", "Kubelet needs time to handle node shutdown", "delay"] as const;
// Talos's InhibitMaxDelay (40 × 30 s) in microseconds, as logind's property carries it.
const TALOS_INHIBIT_DELAY_MAX_USEC = 1_200_000_000n;

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-logind-"));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

async function startLogind(
  name: string,
  timeoutMs = INHIBIT_DELAY_MAX_MS,
): Promise<{ logind: Logind; socket: string }> {
  const socket = path.join(dir, name, "system_bus_socket");
  const logind = new Logind(socket, timeoutMs);
  await logind.start();
  return { logind, socket };
}

async function connect(socket: string) {
  // sessionBus passes its options on whole, negotiateUnixFd too, which its types leave out.
  const options: dbus.SessionBusOptions & dbus.SystemBusOptions = {
    busAddress: `unix:path=${socket}`,
    negotiateUnixFd: true,
  };
  const bus = dbus.sessionBus(options);
  const obj = await bus.getProxyObject(LOGIND_NAME, LOGIND_PATH);
  return {
    bus,
    props: obj.getInterface("org.freedesktop.DBus.Properties"),
    manager: obj.getInterface(MANAGER_INTERFACE),
  };
}

test("a dbus-next client reads the delay, holds a lock, and the shutdown hook waits for its release", async () => {
  const { logind, socket } = await startLogind("release");
  const { bus, props, manager } = await connect(socket);
  try {
    assert.equal(fs.statSync(socket).mode & 0o777, 0o600);
    const delay = await props.Get(MANAGER_INTERFACE, "InhibitDelayMaxUSec");
    assert.equal(delay.signature, "t");
    assert.equal(delay.value, TALOS_INHIBIT_DELAY_MAX_USEC);

    const fd: number = await manager.Inhibit(...KUBELET_INHIBIT);
    assert.ok(fs.fstatSync(fd).isFIFO(), "the lock is the write end of a pipe");

    const events: string[] = [];
    let signalledAt = 0n;
    manager.on("PrepareForShutdown", (active: boolean) => {
      events.push(`PrepareForShutdown(${active})`);
      signalledAt = process.hrtime.bigint();
      setTimeout(() => {
        events.push("lock closed");
        fs.closeSync(fd);
      }, 200);
    });
    // The match rule is in once a later call on the same connection is answered.
    await props.Get(MANAGER_INTERFACE, "InhibitDelayMaxUSec");

    const outcome = await logind.waitShutdown(new AbortController().signal);
    events.push(`hook returned: ${outcome}`);
    assert.deepEqual(events, ["PrepareForShutdown(true)", "lock closed", "hook returned: released"]);
    const heldMs = Number(process.hrtime.bigint() - signalledAt) / 1e6;
    console.log(`the hook waited ${heldMs.toFixed(0)} ms after the signal for a lock closed 200 ms after it`);
  } finally {
    bus.disconnect();
    await logind.stop();
  }
});

test("a lock never released is cut off at the timeout", async () => {
  const { logind, socket } = await startLogind("timeout", 300);
  const { bus, manager } = await connect(socket);
  try {
    const fd: number = await manager.Inhibit(...KUBELET_INHIBIT);
    assert.equal(await logind.waitShutdown(new AbortController().signal), "timeout");
    fs.closeSync(fd);
  } finally {
    bus.disconnect();
    await logind.stop();
  }
});

test("the lock is the fd, not the connection: a client that disconnects still delays the shutdown until it closes it", async () => {
  const { logind, socket } = await startLogind("holder-gone");
  const { bus, manager } = await connect(socket);
  try {
    const fd: number = await manager.Inhibit(...KUBELET_INHIBIT);
    const shutdown = logind.waitShutdown(new AbortController().signal);
    bus.disconnect();
    // The connection is gone, the lock still open: the hook waits until the holder closes it.
    let returned = false;
    void shutdown.then(() => (returned = true));
    await roundTrip(socket);
    assert.equal(returned, false);
    fs.closeSync(fd);
    assert.equal(await shutdown, "released");
  } finally {
    await logind.stop();
  }
});

// A round trip on a fresh connection: everything sent before it has been handled.
async function roundTrip(socket: string): Promise<void> {
  const c = await connect(socket);
  await c.props.Get(MANAGER_INTERFACE, "InhibitDelayMaxUSec");
  c.bus.disconnect();
}

test("bad calls get D-Bus errors and the bus keeps answering", async () => {
  const { logind, socket } = await startLogind("errors");
  const { bus, props: p, manager } = await connect(socket);
  try {
    await assert.rejects(manager.Inhibit("shutdown", "kubelet", "why", "sometimes"), {
      type: "org.freedesktop.DBus.Error.InvalidArgs",
    });
    await assert.rejects(p.Get(MANAGER_INTERFACE, "NoSuchProperty"), {
      type: "org.freedesktop.DBus.Error.UnknownProperty",
    });
    await assert.rejects(bus.getProxyObject("org.example.Nobody", "/"), {
      type: "org.freedesktop.DBus.Error.ServiceUnknown",
    });
    assert.equal((await p.Get(MANAGER_INTERFACE, "InhibitDelayMaxUSec")).value, TALOS_INHIBIT_DELAY_MAX_USEC);
  } finally {
    bus.disconnect();
    await logind.stop();
  }
});

test("a godbus client does what the kubelet's inhibit_linux.go does", async () => {
  const fixture = path.join(repo, "test/fixtures/logind-client");
  const client = path.join(dir, "logind-client");
  execFileSync("go", ["build", "-o", client, "."], {
    cwd: fixture,
    stdio: "inherit",
    env: { ...process.env, CGO_ENABLED: "0" },
  });
  const { logind, socket } = await startLogind("godbus");
  const go = spawn(client, [], {
    env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: `unix:path=${socket}` },
    stdio: ["pipe", "pipe", "inherit"],
  });
  try {
    const lines = readline.createInterface({ input: go.stdout })[Symbol.asyncIterator]();
    const next = async () => String((await lines.next()).value);
    assert.equal(await next(), `delay ${TALOS_INHIBIT_DELAY_MAX_USEC}`);
    assert.equal(await next(), "lock fifo=true");
    assert.equal(await next(), "ready");

    const events: string[] = [];
    const shutdown = logind
      .waitShutdown(new AbortController().signal)
      .then((outcome) => void events.push(`hook returned: ${outcome}`));
    events.push(await next());
    events.push("release sent");
    go.stdin.write("release\n");
    await shutdown;
    assert.deepEqual(events, [
      "org.freedesktop.login1.Manager.PrepareForShutdown true",
      "release sent",
      "hook returned: released",
    ]);
    assert.equal(await next(), "released");
  } finally {
    go.stdin.end();
    if (go.exitCode === null) await once(go, "exit");
    await logind.stop();
  }
});

test("a stop during the start closes the bus once it listens", async () => {
  const socket = path.join(dir, "stop-while-starting", "system_bus_socket");
  const logind = new Logind(socket);
  const started = logind.start();
  await logind.stop();
  await started;
  // Node's server removes its socket when it closes: a client finds no bus there.
  const refused = await new Promise<NodeJS.ErrnoException>((resolve) =>
    net
      .connect(socket)
      .on("error", resolve)
      .on("connect", () => resolve(new Error("connected"))),
  );
  assert.equal(refused.code, "ENOENT");
  assert.equal(fs.existsSync(socket), false);
});

test("an fd a client sends never enters machined: the kernel closes it when the bus reads the message", async () => {
  const { logind, socket } = await startLogind("client-fd");
  const client = net.connect(socket);
  await once(client, "connect");
  const pipe = openPipe();
  const readEnd = new net.Socket({ fd: pipe.read, readable: true, writable: false });
  readEnd.resume();
  try {
    // Hello with the pipe's write end beside it (SCM_RIGHTS), as a client that passes fds would send it.
    const hello = encodeMessage({
      type: MessageType.methodCall,
      serial: 1,
      path: "/org/freedesktop/DBus",
      interface: "org.freedesktop.DBus",
      member: "Hello",
      destination: "org.freedesktop.DBus",
    });
    const writer = new FdSocketWriter(client);
    writer.write(Buffer.from("\0AUTH EXTERNAL 30\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n", "latin1"), []);
    writer.write(hello.data, [pipe.write]);
    // The reply to Hello says the bus read the message, and with it the fd.
    const agreed = "AGREE_UNIX_FD\r\n";
    const reader = new MessageReader();
    let sasl: string | undefined = "";
    const reply = await new Promise<BusMessage>((resolve) =>
      client.on("data", (bytes: Buffer) => {
        if (sasl !== undefined) {
          sasl += bytes.toString("latin1");
          const end = sasl.indexOf(agreed);
          if (end < 0) return;
          bytes = Buffer.from(sasl.slice(end + agreed.length), "latin1");
          sasl = undefined;
        }
        const [first] = reader.push(bytes);
        if (first) resolve(first);
      }),
    );
    assert.equal(reply.replySerial, 1);
    assert.match(String(reply.body?.[0]), /^:1\.\d+$/);
    // Were a copy installed in this process (the bus's), the pipe would stay open after the sender's copy closes.
    fs.closeSync(pipe.write);
    await once(readEnd, "close");
  } finally {
    readEnd.destroy();
    client.destroy();
    await logind.stop();
  }
});
