// Equinix Metal's events against a scripted transport: the URL (em.events_url), the body as
// Talos marshals it, the retries while the endpoint cannot be reached, and the delivery queue
// that logs a failure and goes on.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setLogSink } from "../../../../agent/src/log.js";
import {
  configFailedEvent,
  configLoadedEvent,
  maintenanceEvent,
  platformEvents,
} from "../../../../agent/src/machined/platform-events.js";
import { aws } from "../../../../agent/src/machined/platforms/aws.js";
import { equinixMetal } from "../../../../agent/src/machined/platforms/equinixmetal.js";
import {
  EventRejectedError,
  equinixMetalEventBody,
  NoEventUrlError,
} from "../../../../agent/src/machined/platforms/equinixmetal-events.js";
import { MetadataUnreachableError } from "../../../../agent/src/machined/platforms/metadata-http.js";
import type { PlatformEventIo } from "../../../../agent/src/machined/platforms/platform.js";
import { RetriesExhaustedError } from "../../../../agent/src/machined/platforms/retry.js";
import { platformIo, reply, ScriptedHttp, type Answer } from "./helpers.js";

const eventsUrl = "http://tinkerbell.ny5.packet.net/events";

function eventIo(answer: Answer, cmdline: Record<string, string[]> = { "em.events_url": [eventsUrl] }) {
  const http = new ScriptedHttp(new Map([[`POST ${eventsUrl}`, answer]]));
  const { retry, log, signal } = platformIo(http);
  const io: PlatformEventIo = { http, cmdline: new Map(Object.entries(cmdline)), signal, retry, log };
  return { http, io };
}

/** The log lines written while `fn` runs. */
async function logged(fn: () => Promise<void>): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const previous = setLogSink((line) => lines.push(line));
  try {
    await fn();
  } finally {
    setLogSink(previous);
  }
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("equinixMetal events", () => {
  test("each event is one POST of Talos's JSON to em.events_url", async () => {
    const { http, io } = eventIo(reply(200));
    await equinixMetal.sendEvent?.(maintenanceEvent, io);
    await equinixMetal.sendEvent?.(configLoadedEvent, io);
    assert.deepEqual(
      http.sent.map((s) => [s.method, s.url, s.body]),
      [
        [
          "POST",
          eventsUrl,
          '{"type":"activate","msg":"Talos booted into maintenance mode. Ready for user interaction."}',
        ],
        ["POST", eventsUrl, '{"type":"talos.prov.config.loaded","msg":"Talos machine config loaded successfully."}'],
      ],
    );
  });

  test("a failure carries its error after the message, escaped as Go's encoding/json escapes it", () => {
    assert.equal(
      equinixMetalEventBody(configFailedEvent('failed to load config via platform equinixMetal: "a" <b> & c\n')),
      '{"type":"failure","msg":"Error loading and validating Talos machine config.: failed to load config via platform equinixMetal: \\"a\\" \\u003cb\\u003e \\u0026 c\\n"}',
    );
  });

  test("the first em.events_url is the one posted to", async () => {
    const { http, io } = eventIo(reply(200), { "em.events_url": [eventsUrl, "http://other/events"] });
    await equinixMetal.sendEvent?.(configLoadedEvent, io);
    assert.deepEqual(
      http.sent.map((s) => s.url),
      [eventsUrl],
    );
  });

  test("without em.events_url nothing is sent: NoEventUrlError", async () => {
    const { http, io } = eventIo(reply(200), {});
    await assert.rejects(equinixMetal.sendEvent?.(configLoadedEvent, io) ?? Promise.resolve(), NoEventUrlError);
    assert.equal(http.sent.length, 0);
  });

  test("an unreachable endpoint is asked again with the same body; then RetriesExhaustedError", async () => {
    let failures = 2;
    const flaky: Answer = () => {
      if (failures-- > 0) throw new MetadataUnreachableError("connect ECONNREFUSED");
      return reply(200);
    };
    const recovered = eventIo(flaky);
    await equinixMetal.sendEvent?.(configLoadedEvent, recovered.io);
    assert.equal(recovered.http.sent.length, 3);
    assert.equal(new Set(recovered.http.sent.map((s) => s.body)).size, 1);

    const down = eventIo(() => {
      throw new MetadataUnreachableError("connect ECONNREFUSED");
    });
    await assert.rejects(
      equinixMetal.sendEvent?.(configLoadedEvent, down.io) ?? Promise.resolve(),
      RetriesExhaustedError,
    );
    assert.equal(down.http.sent.length, 3, "the scripted timing allows three attempts");
  });

  test("an answer of 500 is not retried (Talos reads no status) but is an EventRejectedError", async () => {
    const { http, io } = eventIo(reply(500, "oops"));
    await assert.rejects(equinixMetal.sendEvent?.(configLoadedEvent, io) ?? Promise.resolve(), EventRejectedError);
    assert.equal(http.sent.length, 1);
  });
});

describe("platformEvents", () => {
  test("events go out in the order fired; a failed one is a warning and the next is still sent", async () => {
    let answers = [reply(500), reply(200), reply(200)];
    const { http, io } = eventIo(() => {
      const [first, ...rest] = answers;
      answers = rest;
      return first ?? reply(200);
    });
    const events = platformEvents(equinixMetal, io);
    const lines = await logged(async () => {
      events.fire(configFailedEvent("bad"));
      events.fire(maintenanceEvent);
      events.fire(configLoadedEvent);
      await events.drained();
    });
    assert.deepEqual(
      http.sent.map((s) => (JSON.parse(s.body ?? "") as { type: string }).type),
      ["failure", "activate", "talos.prov.config.loaded"],
    );
    const warnings = lines.filter((l) => l["level"] === "warn");
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.["msg"], "failed sending event");
    assert.equal(warnings[0]?.["type"], "failure");
    assert.equal(warnings[0]?.["platform"], "equinixMetal");
    assert.match(String(warnings[0]?.["error"]), /status 500/);
  });

  test("no em.events_url: each event is a warning, and firing never throws", async () => {
    const { http, io } = eventIo(reply(200), {});
    const events = platformEvents(equinixMetal, io);
    const lines = await logged(async () => {
      events.fire(maintenanceEvent);
      await events.drained();
    });
    assert.equal(http.sent.length, 0);
    assert.ok(lines.some((l) => l["msg"] === "failed sending event" && /no event URL/.test(String(l["error"]))));
  });

  test("a platform without an events endpoint sends nothing", async () => {
    const { http, io } = eventIo(reply(200));
    for (const platform of [aws, undefined]) {
      const events = platformEvents(platform, io);
      events.fire(configLoadedEvent);
      await events.drained();
    }
    assert.equal(http.sent.length, 0);
  });
});
