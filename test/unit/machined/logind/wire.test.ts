import assert from "node:assert/strict";
import { test } from "node:test";
import { matchRule } from "../../../../agent/src/machined/logind/bus.js";
import {
  DBusProtocolError,
  encodeMessage,
  MessageReader,
  MessageType,
  SaslServer,
} from "../../../../agent/src/machined/logind/wire.js";

const lines = (s: SaslServer, text: string) => s.push(Buffer.from(text, "latin1"));

test("SASL: godbus's exchange (AUTH, then EXTERNAL with its identity, fd passing, BEGIN); the bytes after BEGIN are the first message's", () => {
  const s = new SaslServer();
  const first = lines(s, "\0AUTH\r\n");
  assert.deepEqual(first, { replies: ["REJECTED EXTERNAL\r\n"], rest: undefined });
  const ok = lines(s, "AUTH EXTERNAL 30\r\nNEGOTIATE_UNIX_FD\r\n");
  assert.match(ok.replies[0]!, /^OK [0-9a-f]{32}\r\n$/);
  assert.equal(ok.replies[1], "AGREE_UNIX_FD\r\n");
  assert.deepEqual(lines(s, "BEGIN\r\nl\x01"), { replies: [], rest: Buffer.from("l\x01", "latin1") });
});

test("SASL: EXTERNAL without its identity asks for DATA; another mechanism is rejected; no NUL byte is a protocol error", () => {
  const s = new SaslServer();
  assert.deepEqual(lines(s, "\0AUTH DBUS_COOKIE_SHA1 30\r\nAUTH EXTERNAL\r\n").replies, [
    "REJECTED EXTERNAL\r\n",
    "DATA\r\n",
  ]);
  assert.match(lines(s, "DATA\r\n").replies[0]!, /^OK /);
  assert.throws(() => lines(new SaslServer(), "AUTH\r\n"), DBusProtocolError);
});

test("messages split across reads come out whole and in order, bodies in dbus-next's form", () => {
  const a = encodeMessage({
    type: MessageType.methodCall,
    serial: 1,
    path: "/org/freedesktop/DBus",
    interface: "org.freedesktop.DBus",
    member: "Hello",
    destination: "org.freedesktop.DBus",
  }).data;
  const b = encodeMessage({
    type: MessageType.methodCall,
    serial: 2,
    path: "/org/freedesktop/login1",
    member: "Inhibit",
    signature: "ssss",
    body: ["shutdown", "kubelet", "why", "delay"],
  }).data;
  const bytes = Buffer.concat([a, b]);
  const reader = new MessageReader();
  const out = [
    ...reader.push(bytes.subarray(0, 10)),
    ...reader.push(bytes.subarray(10, a.length + 3)),
    ...reader.push(bytes.subarray(a.length + 3)),
  ];
  assert.deepEqual(
    out.map((m) => [m.serial, m.member, m.body]),
    [
      [1, "Hello", []],
      [2, "Inhibit", ["shutdown", "kubelet", "why", "delay"]],
    ],
  );
});

test("match rules: the kubelet's rule takes PrepareForShutdown from login1 and nothing else", () => {
  const signal = {
    path: "/org/freedesktop/login1",
    interface: "org.freedesktop.login1.Manager",
    member: "PrepareForShutdown",
    body: [true],
  };
  const senders = ["org.freedesktop.login1", ":1.0"];
  const kubelet =
    "type='signal',interface='org.freedesktop.login1.Manager',member='PrepareForShutdown',path='/org/freedesktop/login1'";
  assert.equal(matchRule(kubelet, signal, senders), true);
  assert.equal(matchRule(`${kubelet},sender=':1.0'`, signal, senders), true);
  assert.equal(matchRule("type='signal',member='PrepareForSleep'", signal, senders), false);
  assert.equal(matchRule("type='signal',sender='org.freedesktop.systemd1'", signal, senders), false);
  assert.equal(matchRule("type='signal',path_namespace='/org/freedesktop'", signal, senders), true);
});
