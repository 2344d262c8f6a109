import assert from "node:assert/strict";
import { test } from "node:test";
import { Dhcp6Client, type Dhcp6Transport, type Lease6Event } from "../../../agent/src/network/dhcp6/client.js";
import { type Timers } from "../../../agent/src/network/dhcp4/client.js";
import {
  decodeMessage,
  type Dhcp6Message,
  duidLL,
  encodeIaNa,
  encodeMessage,
  MessageType,
  Option,
} from "../../../agent/src/network/dhcp6/packet.js";

const MAC = "02:00:00:00:00:01";
const serverId = Buffer.from("000300010200000000fe", "hex");

/** Time stands still: only the first SOLICIT is sent. */
const stillTimers: Timers = { now: () => 1_000_000, setTimeout: () => 0, clearTimeout: () => undefined };

function setup() {
  const sent: Dhcp6Message[] = [];
  let handler: ((p: Buffer) => void) | undefined;
  const transport: Dhcp6Transport = {
    send: async (p) => void sent.push(decodeMessage(p)),
    onReceive: (h) => (handler = h),
    close: () => undefined,
  };
  const events: Lease6Event[] = [];
  const client = new Dhcp6Client({
    linkName: "eth0",
    hardwareAddr: MAC,
    transport,
    timers: stillTimers,
    iaid: 7,
    onEvent: (e) => void events.push(e),
  });
  const deliver = (type: MessageType, extra: [number, Buffer][]) =>
    handler!(
      encodeMessage({
        type,
        transactionId: sent.at(-1)!.transactionId,
        options: [
          [Option.ClientId, duidLL(MAC)],
          [Option.ServerId, serverId],
          [Option.IaNa, encodeIaNa(7, [{ address: "fd00::50", preferredLifetime: 120, validLifetime: 240 }], 60, 96)],
          ...extra,
        ],
      }),
    );
  return { client, deliver, events };
}

test("a REPLY with a malformed status or NTP option is dropped, not thrown out of the socket handler", () => {
  const s = setup();
  s.client.start();
  // A status code needs two bytes; an NTP suboption header four.
  s.deliver(MessageType.Reply, [
    [Option.RapidCommit, Buffer.alloc(0)],
    [Option.StatusCode, Buffer.from([0])],
  ]);
  s.deliver(MessageType.Reply, [
    [Option.RapidCommit, Buffer.alloc(0)],
    [Option.NtpServer, Buffer.from([0, 1, 0])],
  ]);
  assert.equal(s.client.state, "soliciting");
  assert.equal(s.events.length, 0);
  s.deliver(MessageType.Reply, [[Option.RapidCommit, Buffer.alloc(0)]]);
  assert.equal(s.client.state, "bound");
  assert.deepEqual(
    s.events.map((e) => [e.type, e.lease.addresses.map((a) => a.address)]),
    [["bound", ["fd00::50"]]],
  );
});
