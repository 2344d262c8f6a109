import assert from "node:assert/strict";
import { test } from "node:test";
import { EventBus } from "../../../../agent/src/machined/events.js";
import { streamEvents, type EventsRequest } from "../../../../agent/src/machined/rpc/events.js";
import { FakeCall } from "./fake-call.js";

const tick = () => new Promise((resolve) => setImmediate(resolve));
const ids = (call: FakeCall<EventsRequest>) => call.written.map((m) => (m as { id: string }).id);

test("a follower whose stream is full is not written to until it drains; the events wait in the bus, then arrive in order", async () => {
  const bus = new EventBus();
  bus.publish("machine.TaskEvent", { task: "a", action: 0 });
  const call = new FakeCall<EventsRequest>({ tail_events: -1 });
  call.full = true;
  const done = streamEvents(bus, call.asStream());
  await tick();
  assert.equal(call.written.length, 1, "the first write filled the stream");
  for (let i = 0; i < 50; i++) bus.publish("machine.TaskEvent", { task: `t${i}`, action: 0 });
  await tick();
  assert.equal(call.written.length, 1, "nothing more is written while the client does not read");
  call.full = false;
  call.emit("drain");
  await tick();
  assert.deepEqual(
    ids(call),
    bus.backlog({ tailEvents: -1 }).map((e) => e.id),
  );
  call.cancel();
  await done;
  assert.equal(call.leftover(), 0);
});

test("a follower that falls more than the history behind has its stream ended, as Talos's watch on overrun", async () => {
  const bus = new EventBus();
  const call = new FakeCall<EventsRequest>({ tail_events: 0 });
  call.full = true;
  const done = streamEvents(bus, call.asStream());
  await tick();
  bus.publish("machine.TaskEvent", { task: "first", action: 0 });
  await tick();
  for (let i = 0; i < 1001; i++) bus.publish("machine.TaskEvent", { task: `t${i}`, action: 0 });
  call.full = false;
  call.emit("drain");
  await done;
  assert.equal(call.ended, true);
  assert.equal(call.written.length, 1);
  assert.equal(call.leftover(), 0);
});

test("tail options: the last n, all kept, after an id, with_actor_id", async () => {
  const bus = new EventBus();
  for (let i = 0; i < 5; i++) bus.publish("machine.TaskEvent", { task: `t${i}`, action: 0 }, i % 2 ? "actor" : "");
  const all = bus.backlog({ tailEvents: -1 }).map((e) => e.id);
  assert.deepEqual(
    bus.backlog({ tailEvents: 2 }).map((e) => e.id),
    all.slice(3),
  );
  assert.deepEqual(
    bus.backlog({ tailId: all[1]! }).map((e) => e.id),
    all.slice(2),
  );
  assert.deepEqual(bus.backlog({}), []);
  const call = new FakeCall<EventsRequest>({ tail_events: -1, with_actor_id: "actor" });
  const done = streamEvents(bus, call.asStream());
  await tick();
  assert.deepEqual(ids(call), [all[1], all[3]]);
  call.cancel();
  await done;
});

test("a payload is encoded when a follower reads it, once, to the bytes its message type gives", async () => {
  const { decode } = await import("../../../../agent/src/api/index.js");
  const bus = new EventBus();
  // error must be a message: encoding this throws, so publishing must not encode.
  bus.publish("machine.SequenceEvent", { sequence: "boot", error: "not a message" });
  const [bad] = bus.backlog({ tailEvents: -1 });
  assert.throws(() => bad!.payload);
  bus.publish("machine.TaskEvent", { task: "t", action: 1 });
  const good = bus.backlog({ tailEvents: 1 })[0]!;
  assert.equal(good.payload, good.payload, "encoded once and kept");
  assert.deepEqual(decode("machine.TaskEvent", good.payload), { task: "t", action: 1 });
});
