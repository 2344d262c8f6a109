// apid's sessions to other nodes' apid (remote-backends.ts) against a Talos apid's keepalive enforcement: grpc-go's
// default policy, which Talos's apid serves with. A fake remote counts pings as grpc-go's server does and
// answers a client pinging too often with GOAWAY ENHANCE_YOUR_CALM "too_many_pings", ending every call on
// the connection. A quiet stream (`logs -f` with nothing to say) must outlive many of that policy's minimum
// intervals; pings every 30 s, as grpc-js's channels are often set to send them, lose it. Every interval is a thousandth of its real length.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import http2, { type ServerHttp2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import {
  RemoteBackends,
  remoteSessionOptions,
  type RemoteSessionOptions,
} from "../../../agent/src/apid/remote-backends.js";
import { openFrameStream } from "../../../agent/src/apid/frame-stream.js";
import {
  generateSelfSignedCA,
  issueCertificate,
  tlsKeyPem,
  type CertificateAuthority,
} from "../../../agent/src/pki/index.js";

const scale = 1 / 1000;
// grpc-go's keepalive.EnforcementPolicy defaults: MinTime 5 minutes, no pings without calls; a fourth ping
// running too soon (more than maxPingStrikes = 2 strikes) ends the connection.
const minTimeMs = 5 * 60_000 * scale;
const noCallsMinTimeMs = 2 * 3600_000 * scale;
const maxPingStrikes = 2;
// How long the fake keeps each stream open and quiet before it ends it with a message and OK.
const quietMs = 4 * minTimeMs;

interface Enforcement {
  pings: number;
  goaways: string[];
}

/** What happened on one session of the fake, and whether it has written since the last ping (grpc-go then forgives). */
interface SessionState {
  open: number;
  wrote: boolean;
  lastPingAt: number;
  strikes: number;
}

let ca: CertificateAuthority;
let server: http2.Http2SecureServer;
let port = 0;
const seen: Enforcement = { pings: 0, goaways: [] };

/** grpc-go's http2Server.handlePing, with its minimum scaled: strikes for pings too soon, forgiven by a write. */
function enforce(session: ServerHttp2Session, state: SessionState): void {
  session.on("ping", () => {
    seen.pings++;
    const now = performance.now();
    const last = state.lastPingAt;
    state.lastPingAt = now;
    if (state.wrote) {
      state.wrote = false;
      state.strikes = 0;
      return;
    }
    // Without calls grpc-go allows one ping in two hours.
    if (last + (state.open < 1 ? noCallsMinTimeMs : minTimeMs) > now) state.strikes++;
    if (state.strikes > maxPingStrikes) {
      seen.goaways.push("too_many_pings");
      session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, 0, Buffer.from("too_many_pings"));
      setImmediate(() => session.destroy());
    }
  });
}

before(async () => {
  ca = await generateSelfSignedCA({ organizations: ["talos"] });
  const cert = await issueCertificate(ca, {
    commonName: "node",
    ipAddresses: ["127.0.0.1"],
    extKeyUsage: ["serverAuth"],
    lifetimeMs: 3600_000,
  });
  server = http2.createSecureServer({
    cert: cert.certPem,
    key: tlsKeyPem(cert.keyPem),
    ca: ca.certPem,
    requestCert: true,
    rejectUnauthorized: true,
    ALPNProtocols: ["h2"],
  });
  const states = new WeakMap<ServerHttp2Session, SessionState>();
  server.on("session", (session: ServerHttp2Session) => {
    const state: SessionState = { open: 0, wrote: false, lastPingAt: -Infinity, strikes: 0 };
    states.set(session, state);
    enforce(session, state);
  });
  // Every call is a quiet stream: its headers at once, then nothing until one message and OK.
  server.on("stream", (stream) => {
    const state = states.get(stream.session as ServerHttp2Session)!;
    state.open++;
    stream.on("close", () => void state.open--);
    stream.on("error", () => {});
    stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, { waitForTrailers: true });
    state.wrote = true;
    stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0", "grpc-message": "" }));
    const timer = setTimeout(() => {
      const message = Buffer.from("the last line");
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(message.length, 1);
      state.wrote = true;
      stream.end(Buffer.concat([prefix, message]));
    }, quietMs);
    stream.on("close", () => clearTimeout(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

after(() => server.close());

/** `options` with its ping interval scaled; the ping's answer keeps its full time (answers are prompt here, but the host may be loaded). */
function scaled(options: RemoteSessionOptions): RemoteSessionOptions {
  return options.keepalive
    ? { ...options, keepalive: { ...options.keepalive, timeMs: options.keepalive.timeMs * scale } }
    : options;
}

/** A quiet stream from the fake through a session made with `options`: its messages and status. */
async function quietStream(
  options: RemoteSessionOptions,
): Promise<{ messages: string[]; status: grpc.StatusObject; enforcement: Enforcement }> {
  seen.pings = 0;
  seen.goaways = [];
  const remotes = new RemoteBackends(options);
  const cert = await issueCertificate(ca, {
    commonName: "apid",
    organizations: ["os:impersonator"],
    extKeyUsage: ["clientAuth"],
    lifetimeMs: 3600_000,
  });
  remotes.setIdentity({ crt: cert.certPem, key: cert.keyPem, acceptedCAs: [ca.certPem] });
  try {
    const source = openFrameStream(
      remotes.session(`127.0.0.1:${port}`)!,
      "/machine.MachineService/Logs",
      new grpc.Metadata(),
      Buffer.alloc(0),
      Infinity,
    );
    const messages: string[] = [];
    source.onMessage((m) => messages.push(m.toString()));
    const status = await new Promise<grpc.StatusObject>((resolve) => source.whenOver(resolve));
    return { messages, status, enforcement: { ...seen } };
  } finally {
    remotes.close();
  }
}

test("a quiet stream to a node enforcing Talos apid's keepalive policy outlives several of its minimum intervals", async () => {
  const { messages, status, enforcement } = await quietStream(scaled(remoteSessionOptions));
  assert.deepEqual(enforcement.goaways, []);
  assert.equal(status.code, grpc.status.OK, status.details);
  assert.deepEqual(messages, ["the last line"]);
});

test("the fake enforces: pings every 30 s lose the quiet stream to GOAWAY too_many_pings", async () => {
  const { messages, status, enforcement } = await quietStream(
    scaled({ ...remoteSessionOptions, keepalive: { timeMs: 30_000, timeoutMs: 10_000 } }),
  );
  assert.deepEqual(enforcement.goaways, ["too_many_pings"]);
  assert.ok(enforcement.pings > maxPingStrikes);
  assert.equal(status.code, grpc.status.UNAVAILABLE, status.details);
  assert.deepEqual(messages, []);
});
