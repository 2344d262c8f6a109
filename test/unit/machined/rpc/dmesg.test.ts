import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { InvalidInputError, SystemError } from "../../../../agent/src/errors.js";
import {
  bootTimeNs,
  dmesgLines,
  formatKmsg,
  rfc3339Nano,
  streamDmesg,
  type DmesgRequest,
} from "../../../../agent/src/machined/rpc/dmesg.js";
import { parseKmsgRecord, unescapeKmsg } from "../../../../agent/src/sys/kmsg.js";
import { FakeCall } from "./fake-call.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-dmesg-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("a /dev/kmsg record: priority and facility from the prefix, sequence, clock, text with its KEY=value lines", () => {
  const rec = parseKmsgRecord(
    Buffer.from("7,160,424069,-;pci_root PNP0A03:00: host bridge window\n SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A03:00\n"),
  );
  assert.deepEqual(rec, {
    facility: 0,
    priority: 7,
    seq: 160,
    usec: 424069,
    message: "pci_root PNP0A03:00: host bridge window\n SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A03:00\n",
  });
  assert.equal(parseKmsgRecord(Buffer.from("30,5,1,c,extra;systemd[1]: started\n")).facility, 3);
});

test("kernel escapes: \\xNN bytes and \\\\ decoded, broken escapes dropped", () => {
  assert.equal(unescapeKmsg(Buffer.from("family \\\\10\\\\ in \\xc2\\xB5s")).toString(), "family \\10\\ in µs");
  assert.equal(unescapeKmsg(Buffer.from("a\\qb\\xzc\\x4")).toString(), "abc");
});

test("malformed records are refused with the reader's words", () => {
  assert.throws(
    () => parseKmsgRecord(Buffer.from("no prefix")),
    (e: Error) => e instanceof InvalidInputError && e.message === "kernel message should contain a prefix",
  );
  assert.throws(() => parseKmsgRecord(Buffer.from("6,1;x")), /message metdata should have at least 3 parts, got 2/);
  assert.throws(
    () => parseKmsgRecord(Buffer.from("x,1,2;x")),
    /^InvalidInputError: error parsing priority: strconv.ParseInt: parsing "x": invalid syntax$/,
  );
});

test("RFC 3339 with nanoseconds as Go prints it: trailing zeros and a bare dot dropped", () => {
  assert.equal(rfc3339Nano(1_700_000_000_123_456_000n), "2023-11-14T22:13:20.123456Z");
  assert.equal(rfc3339Nano(1_700_000_000_100_000_000n), "2023-11-14T22:13:20.1Z");
  assert.equal(rfc3339Nano(1_700_000_000_000_000_000n), "2023-11-14T22:13:20Z");
});

test("the line talosctl prints: facility, priority padded to 7, time from boot + clock, text", () => {
  const boot = bootTimeNs("100.75 200.00\n", 1_700_000_100_500);
  assert.equal(boot, 1_700_000_000_500_000_000n, "whole seconds of uptime, as sysinfo(2) gives them");
  const rec = parseKmsgRecord(Buffer.from("6,339,5140900,-;NET: Registered protocol family 10\n"));
  assert.equal(
    formatKmsg(rec, boot),
    "kern:    info: [2023-11-14T22:13:25.6409Z]: NET: Registered protocol family 10\n",
  );
  const warn = parseKmsgRecord(Buffer.from("12,1,0,-;x"));
  assert.equal(formatKmsg(warn, boot), "user: warning: [2023-11-14T22:13:20.5Z]: x");
  assert.equal(
    formatKmsg(parseKmsgRecord(Buffer.from("91,1,0,-;x")), boot).split(":")[0],
    "local0",
    "facility 11 reads as Talos names it",
  );
});

// A regular file stands in for /dev/kmsg: one read returns it whole, as one record.
test("streamDmesg sends a record as one line, a malformed record as metadata.error, and ends without follow", async () => {
  const good = path.join(dir, "good");
  writeFileSync(good, "6,1,2000000,-;hello\n");
  const call = new FakeCall<DmesgRequest>({});
  await streamDmesg(call.asStream(), good);
  assert.equal(call.written.length, 1);
  assert.match(
    String((call.written[0] as { bytes: Buffer }).bytes),
    /^kern:    info: \[\d{4}-[\d-]+T[\d:.]+Z\]: hello\n$/,
  );
  assert.ok(call.ended);
  assert.equal(call.leftover(), 0);

  const bad = path.join(dir, "bad");
  writeFileSync(bad, "garbage");
  const badCall = new FakeCall<DmesgRequest>({});
  await streamDmesg(badCall.asStream(), bad);
  assert.deepEqual(badCall.written, [{ metadata: { error: "kernel message should contain a prefix" } }]);

  const tail = new FakeCall<DmesgRequest>({ tail: true });
  await streamDmesg(tail.asStream(), good);
  assert.deepEqual(tail.written, [], "tail skips what is buffered");
});

test("streamDmesg: a log that cannot be opened is refused in Talos's words", async () => {
  const call = new FakeCall<DmesgRequest>({});
  const missing = path.join(dir, "missing");
  await assert.rejects(
    streamDmesg(call.asStream(), missing),
    (e: Error) =>
      e instanceof SystemError &&
      e.message === `error opening /dev/kmsg reader: open ${missing}: no such file or directory`,
  );
  assert.equal(call.leftover(), 0);
});

test("streamDmesg follow ends when the client cancels, with no listener left", async () => {
  const good = path.join(dir, "follow");
  writeFileSync(good, "6,1,0,-;x\n");
  const call = new FakeCall<DmesgRequest>({ follow: true });
  call.onWrite = () => setTimeout(() => call.cancel(), 50);
  await streamDmesg(call.asStream(), good);
  assert.equal(call.written.length, 1);
  assert.equal(call.ended, false);
  assert.equal(call.leftover(), 0);
});

test("dmesgLines (the dashboard's pane): Dmesg's line for each record, followed until the signal aborts", async () => {
  const file = path.join(dir, "pane");
  writeFileSync(file, "4,7,1000000,-;eth0: link up\n");
  const ac = new AbortController();
  const lines: string[] = [];
  for await (const line of dmesgLines(ac.signal, file)) {
    lines.push(line);
    ac.abort();
  }
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /^kern: warning: \[\d{4}-[\d-]+T[\d:.]+Z\]: eth0: link up\n$/);
  const missing = path.join(dir, "missing-pane");
  await assert.rejects(
    dmesgLines(ac.signal, missing).next(),
    (e: Error) =>
      e instanceof SystemError &&
      e.message === `error opening /dev/kmsg reader: open ${missing}: no such file or directory`,
  );
});
