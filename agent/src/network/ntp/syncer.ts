// The SNTP sync loop Talos runs (internal/pkg/ntp): query the server that answered
// last, else each resolved server in turn; follow the answer unless it is a spike,
// stepping the clock beyond 400 ms of offset and slewing it below; poll every 32 s
// at first, doubling towards 2048 s while the offset stays under 50 ms and halving
// when it exceeds 150 ms, back to 32 s above 200 ms, and retrying after 1 s when no
// server answered. A server starting with /dev/ is a PTP hardware clock.

import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { describeError } from "../../errors.js";
import { logger } from "../../log.js";
import type { LeapIndicator, SystemClock } from "../../sys/clock.js";
import type { NtpMeasurement } from "./packet.js";
import { queryNtp } from "./query.js";
import { SpikeDetector } from "./spike.js";

export const MIN_POLL_MS = 32_000;
export const MAX_POLL_MS = 2_048_000;
export const RETRY_POLL_MS = 1_000;
/** Offsets beyond this are stepped, below it slewed. */
export const ADJUST_TIME_LIMIT_MS = 400;
/** A step beyond this is a new epoch (TimeStatus.epoch). */
export const EPOCH_LIMIT_MS = 15 * 60_000;
const EXPECTED_ACCURACY_MS = 200;

export interface Measurement {
  offsetMs: number;
  rttMs: number;
  leap: NtpMeasurement["leap"];
  spike: boolean;
}

export interface NtpSyncerOptions {
  clock: SystemClock;
  servers: readonly string[];
  /** Called once, after the first adjustment of the clock that succeeded. */
  onSynced(): void;
  /** Called after each adjustment of more than 15 minutes. */
  onEpochChange(): void;
  /** Name -> addresses; default: the system resolver. */
  resolve?: (name: string) => Promise<string[]>;
  /** One NTP exchange with an address; default: SNTP over UDP port 123. */
  query?: (address: string, clock: SystemClock, signal: AbortSignal) => Promise<NtpMeasurement>;
  minPollMs?: number;
  maxPollMs?: number;
  retryPollMs?: number;
}

const log = logger("ntp");

export class NtpSyncer {
  private servers: string[];
  private lastServer = "";
  /** Servers whose name did not resolve last time: said once, not on every retry (one a second while offline). */
  private readonly unresolved = new Set<string>();
  private synced = false;
  private firstSync = true;
  private readonly spikes = new SpikeDetector();
  private wake: (() => void) | undefined;
  private restartRequested = false;
  private readonly minPoll: number;
  private readonly maxPoll: number;
  private readonly retryPoll: number;
  private readonly resolve: (name: string) => Promise<string[]>;
  private readonly query: (address: string, clock: SystemClock, signal: AbortSignal) => Promise<NtpMeasurement>;

  constructor(private readonly opts: NtpSyncerOptions) {
    this.servers = [...opts.servers];
    this.minPoll = opts.minPollMs ?? MIN_POLL_MS;
    this.maxPoll = opts.maxPollMs ?? MAX_POLL_MS;
    this.retryPoll = opts.retryPollMs ?? RETRY_POLL_MS;
    this.resolve = opts.resolve ?? (async (name) => (await lookup(name, { all: true })).map((a) => a.address));
    this.query = opts.query ?? ((address, clock, signal) => queryNtp(address, clock, { signal }));
  }

  /** The server the clock follows now ("" before the first answer or after a change of servers). */
  get currentServer(): string {
    return this.lastServer;
  }

  /** New servers restart the loop at once (an unchanged list changes nothing). */
  setServers(servers: readonly string[]): void {
    if (servers.length === this.servers.length && servers.every((s, i) => s === this.servers[i])) return;
    this.servers = [...servers];
    this.lastServer = "";
    this.restartRequested = true;
    this.wake?.();
  }

  async run(signal: AbortSignal): Promise<void> {
    let pollMs = 0;
    while (!signal.aborted) {
      this.restartRequested = false;
      const { server, measurement } = await this.queryOnce(signal);
      if (signal.aborted) return;
      const abs = measurement ? Math.abs(measurement.offsetMs) : 0;
      if (!measurement) pollMs = this.retryPoll;
      else if (pollMs === 0) pollMs = this.minPoll;
      else if (!measurement.spike && abs > EXPECTED_ACCURACY_MS) pollMs = this.minPoll;
      else if (abs < EXPECTED_ACCURACY_MS * 0.25) {
        if (pollMs < this.maxPoll) pollMs *= 2;
      } else if (measurement.spike || abs > EXPECTED_ACCURACY_MS * 0.75) {
        if (pollMs > this.minPoll) pollMs /= 2;
      }
      if (measurement && pollMs < this.minPoll) pollMs = this.minPoll;
      log.debug("sample stats", { jitterMs: this.spikes.jitter * 1000, pollMs, spike: measurement?.spike ?? false });
      if (measurement && !measurement.spike) await this.adjust(measurement, server, pollMs);
      if (!this.restartRequested) await this.sleep(pollMs, signal);
    }
  }

  private async queryOnce(signal: AbortSignal): Promise<{ server: string; measurement?: Measurement }> {
    let failed = "";
    if (this.lastServer) {
      try {
        return { server: this.lastServer, measurement: await this.queryServer(this.lastServer, signal) };
      } catch (err) {
        log.error(`time query error with server ${JSON.stringify(this.lastServer)}`, { error: describeError(err) });
        failed = this.lastServer;
        this.lastServer = "";
      }
    }
    for (const server of await this.resolveServers(signal)) {
      // The server that just failed is not asked again at once.
      if (server === failed) continue;
      if (signal.aborted || this.restartRequested) return { server: "" };
      try {
        const measurement = await this.queryServer(server, signal);
        this.lastServer = server;
        return { server, measurement };
      } catch (err) {
        log.error(`time query error with server ${JSON.stringify(server)}`, { error: describeError(err) });
      }
    }
    return { server: "" };
  }

  private async resolveServers(signal: AbortSignal): Promise<string[]> {
    const out: string[] = [];
    for (const server of this.servers) {
      if (signal.aborted) break;
      if (server.startsWith("/dev/") || isIP(server) !== 0) {
        out.push(server);
        continue;
      }
      try {
        out.push(...(await this.resolve(server)));
        this.unresolved.delete(server);
      } catch (err) {
        if (!this.unresolved.has(server))
          log.warn(`failed looking up ${JSON.stringify(server)}, ignored`, { error: describeError(err) });
        this.unresolved.add(server);
      }
    }
    return out;
  }

  private async queryServer(server: string, signal: AbortSignal): Promise<Measurement> {
    if (server.startsWith("/dev/")) {
      // A PTP clock is read directly: no round trip, never a spike.
      const ptp = await this.opts.clock.readPtp(server);
      return { offsetMs: ptp - this.opts.clock.now(), rttMs: 0, leap: "none", spike: false };
    }
    const m = await this.query(server, this.opts.clock, signal);
    log.debug("NTP response", { server, offsetMs: m.offsetMs, rttMs: m.rttMs, stratum: m.stratum, leap: m.leap });
    return {
      offsetMs: m.offsetMs,
      rttMs: m.rttMs,
      leap: m.leap,
      spike: this.spikes.isSpike({ offsetS: m.offsetMs / 1000, rttS: m.rttMs / 1000 }),
    };
  }

  private async adjust(m: Measurement, server: string, nextPollMs: number): Promise<void> {
    const leap: LeapIndicator = m.leap === "insert" || m.leap === "delete" ? m.leap : "none";
    const step = Math.abs(m.offsetMs) > ADJUST_TIME_LIMIT_MS;
    const how = step ? "jump" : "slew";
    try {
      if (step) await this.opts.clock.adjust({ kind: "step", offsetMs: m.offsetMs, leap });
      else
        await this.opts.clock.adjust({
          kind: "slew",
          offsetMs: m.offsetMs,
          timeConstant: Math.floor(Math.log2(Math.max(1, Math.floor(nextPollMs / 1000)))) - 4,
          leap,
        });
    } catch (err) {
      log.warn(`adjusting time (${how}) by ${m.offsetMs.toFixed(3)}ms via ${server} failed`, {
        error: describeError(err),
      });
      return;
    }
    // Steps and the first sync are worth a line at info; later slews are routine.
    const fields = { offsetMs: m.offsetMs, server, leap };
    if (step || this.firstSync) log.info(`adjusting time (${how}) by ${m.offsetMs.toFixed(3)}ms via ${server}`, fields);
    else log.debug(`adjusting time (${how}) by ${m.offsetMs.toFixed(3)}ms via ${server}`, fields);
    this.firstSync = false;
    if (Math.abs(m.offsetMs) > EPOCH_LIMIT_MS) this.opts.onEpochChange();
    // As Talos: a step is written to the RTC too, so the next boot starts near the right time.
    // (Talos writes now+offset after the step has applied the offset; we write the stepped time.)
    if (step) {
      await this.opts.clock.writeRtc(this.opts.clock.now()).then(
        () => log.info("synchronized RTC with system clock"),
        (err: unknown) => log.error("error syncing RTC", { error: describeError(err) }),
      );
    }
    if (!this.synced) {
      this.synced = true;
      this.opts.onSynced();
    }
  }

  private sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
      this.wake = done;
    });
  }
}
