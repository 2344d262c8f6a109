import assert from "node:assert/strict";
import { test } from "node:test";
import { datagramFrames, parseSyslog } from "../../../agent/src/services/syslog.js";

// Talos's parser cases (internal/app/syslogd/internal/parser), with the year taken from "now".
const now = new Date("2024-06-01T00:00:00Z");
const cases: [string, string | undefined][] = [
  [
    `<4>Feb 16 17:54:19 time="2024-02-16T17:54:19.857755073Z" level=warning msg="Could not add /dev/mshv to the devices cgroup`,
    `{"content":"time=\\"2024-02-16T17:54:19.857755073Z\\" level=warning msg=\\"Could not add /dev/mshv to the devices cgroup","facility":0,"hostname":"localhost","priority":4,"severity":4,"tag":"unknown","timestamp":"2024-02-16T17:54:19Z"}`,
  ],
  [
    `<6>Mar  3 12:55:18 syslogd_test[834097]: Hello, syslogd!`,
    `{"content":"Hello, syslogd!","facility":0,"hostname":"localhost","priority":6,"severity":6,"tag":"syslogd_test","timestamp":"2024-03-03T12:55:18Z"}`,
  ],
  [
    `<6>Mar  3 12:55:18 Hello, syslogd!`,
    `{"content":"Hello, syslogd!","facility":0,"hostname":"localhost","priority":6,"severity":6,"tag":"unknown","timestamp":"2024-03-03T12:55:18Z"}`,
  ],
  [
    `<4>Feb 16 17:54:19 kata[2569]: time="2024-02-16T17:54:19.857755073Z" level=warning msg="Could not add /dev/mshv to the devices cgroup`,
    `{"content":"time=\\"2024-02-16T17:54:19.857755073Z\\" level=warning msg=\\"Could not add /dev/mshv to the devices cgroup","facility":0,"hostname":"localhost","priority":4,"severity":4,"tag":"kata","timestamp":"2024-02-16T17:54:19Z"}`,
  ],
  [
    `<4>Feb 16 17:54:19 hostname kata[2569]: time="2024-02-16T17:54:19.857755073Z" level=warning msg="Could not add /dev/mshv to the devices cgroup`,
    `{"content":"time=\\"2024-02-16T17:54:19.857755073Z\\" level=warning msg=\\"Could not add /dev/mshv to the devices cgroup","facility":0,"hostname":"hostname","priority":4,"severity":4,"tag":"kata","timestamp":"2024-02-16T17:54:19Z"}`,
  ],
  [
    `<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"] An application event log entry...`,
    `{"app_name":"evntslog","facility":20,"hostname":"mymachine.example.com","message":"An application event log entry...","msg_id":"ID47","priority":165,"proc_id":"-","severity":5,"structured_data":"[exampleSDID@32473 iut=\\"3\\" eventSource=\\"Application\\" eventID=\\"1011\\"]","timestamp":"2003-10-11T22:14:15.003Z","version":1}`,
  ],
  ["not syslog at all", undefined],
  ["<999>Feb 16 17:54:19 x", undefined],
];

test("datagrams parse into Talos's JSON lines (RFC3164 and RFC5424); what is not syslog is dropped", () => {
  for (const [input, expected] of cases) assert.equal(parseSyslog(Buffer.from(input), now), expected, input);
});

test("the relay's frames are split back into datagrams, across chunk boundaries", () => {
  const got: string[] = [];
  const feed = datagramFrames((d) => got.push(d.toString()));
  const frame = (s: string) => Buffer.concat([Buffer.from([0, 0, 0, s.length]), Buffer.from(s)]);
  const all = Buffer.concat([frame("one"), frame(""), frame("three\nlines")]);
  for (let i = 0; i < all.length; i += 3) feed(all.subarray(i, i + 3));
  assert.deepEqual(got, ["one", "", "three\nlines"]);
});
