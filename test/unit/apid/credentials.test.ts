// apid's authentication over real TLS handshakes at its listener (front-listener.ts): client certificate
// roles (O), the clientAuth-only rule, impersonation and RBAC off. Behind the listener a stand-in
// for machined answers with the talos-role it was handed.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { type ListenerMode } from "../../../agent/src/apid/credentials.js";
import { ApiFront } from "../../../agent/src/apid/front-listener.js";
import { BackendSession } from "../../../agent/src/apid/backend-session.js";
import {
  generateSelfSignedCA,
  issueCertificate,
  type CertificateAuthority,
  type ExtKeyUsageName,
} from "../../../agent/src/pki/index.js";
import { tlsKeyPem } from "../../../agent/src/pki/tls.js";

const identity = (b: Buffer) => b;
let ca: CertificateAuthority;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-apid-credentials-"));
const socket = path.join(dir, "machined.sock");
const machined = new grpc.Server();
const fronts: ApiFront[] = [];
const sessions: BackendSession[] = [];

before(async () => {
  ca = await generateSelfSignedCA({ organizations: ["talos"] });
  for (const p of ["/machine.MachineService/Version", "/machine.MachineService/Reboot"]) {
    machined.register(
      p,
      (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) =>
        cb(null, Buffer.from(call.metadata.get("talos-role").join(","))),
      identity,
      identity,
      "unary",
    );
  }
  await new Promise<void>((resolve, reject) =>
    machined.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
});
after(async () => {
  for (const f of fronts) await f.close(0);
  for (const s of sessions) s.close();
  machined.forceShutdown();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** apid's listener on 127.0.0.1 with `mode`, relaying to the stand-in machined. */
async function listen(mode: ListenerMode): Promise<ApiFront> {
  const session = new BackendSession("machined", () => net.connect(socket));
  sessions.push(session);
  const methods = ["/machine.MachineService/Version", "/machine.MachineService/Reboot"].map((p) => ({
    path: p,
    requestStream: false,
    responseStream: false,
  }));
  const front = new ApiFront({
    listen: "127.0.0.1:0",
    mode,
    methods,
    machined: session,
    proxy: session,
    machinedTarget: `unix:${socket}`,
    isSelf: () => false,
    remote: () => undefined,
    canForward: () => false,
  });
  fronts.push(front);
  await front.listen();
  return front;
}

/** A listener whose calls answer with the caller's roles (or the refusal). */
async function serve(
  mode: Omit<ListenerMode & { kind: "mtls" }, "serverCert" | "serverKey" | "acceptedCAs" | "kind">,
): Promise<number> {
  const cert = await issueCertificate(ca, {
    commonName: "node",
    ipAddresses: ["127.0.0.1"],
    extKeyUsage: ["serverAuth"],
    lifetimeMs: 3600_000,
  });
  return (
    await listen({ kind: "mtls", serverCert: cert.certPem, serverKey: cert.keyPem, acceptedCAs: [ca.certPem], ...mode })
  ).port();
}
async function call(
  port: number,
  roles: string[],
  eku: ExtKeyUsageName[],
  md: Record<string, string> = {},
  leafOpts: { issuer?: CertificateAuthority; now?: Date; method?: string } = {},
): Promise<string> {
  const leaf = await issueCertificate(leafOpts.issuer ?? ca, {
    organizations: roles,
    extKeyUsage: eku,
    lifetimeMs: 3600_000,
    ...(leafOpts.now ? { now: leafOpts.now } : {}),
  });
  const creds = grpc.credentials.createSsl(
    Buffer.from(ca.certPem),
    Buffer.from(tlsKeyPem(leaf.keyPem)),
    Buffer.from(leaf.certPem),
  );
  const client = new grpc.Client(`127.0.0.1:${port}`, creds);
  const meta = new grpc.Metadata();
  for (const [k, v] of Object.entries(md)) meta.add(k, v);
  try {
    return await new Promise((resolve, reject) =>
      client.makeUnaryRequest(
        leafOpts.method ?? "/machine.MachineService/Version",
        identity,
        identity,
        Buffer.alloc(0),
        meta,
        (err, res) => (err ? reject(err) : resolve(res!.toString())),
      ),
    );
  } finally {
    client.close();
  }
}

test("roles are the client certificate's O values", async () => {
  const port = await serve({ checkExtKeyUsage: true, enableRbac: true });
  assert.equal(await call(port, ["os:reader"], ["clientAuth"]), "os:reader");
  assert.equal(await call(port, ["os:admin", "os:reader"], ["clientAuth"]), "os:admin,os:reader");
  // talos-role from a non-impersonator is ignored.
  assert.equal(await call(port, ["os:reader"], ["clientAuth"], { "talos-role": "os:admin" }), "os:reader");
});

test("with apidCheckExtKeyUsage, certificates not limited to clientAuth are refused", async () => {
  const port = await serve({ checkExtKeyUsage: true, enableRbac: true });
  await assert.rejects(
    call(port, ["os:admin"], ["clientAuth", "serverAuth"]),
    (e: grpc.ServiceError) => e.code === grpc.status.UNAUTHENTICATED,
  );
  const lax = await serve({ checkExtKeyUsage: false, enableRbac: true });
  assert.equal(await call(lax, ["os:admin"], ["clientAuth", "serverAuth"]), "os:admin");
});

test("the clientAuth-only verdict holds for every call of the same certificate, remembered or not", async () => {
  const port = await serve({ checkExtKeyUsage: true, enableRbac: true });
  const verdicts = async (eku: ExtKeyUsageName[]) => {
    const leaf = await issueCertificate(ca, { organizations: ["os:reader"], extKeyUsage: eku, lifetimeMs: 3600_000 });
    const client = new grpc.Client(
      `127.0.0.1:${port}`,
      grpc.credentials.createSsl(
        Buffer.from(ca.certPem),
        Buffer.from(tlsKeyPem(leaf.keyPem)),
        Buffer.from(leaf.certPem),
      ),
    );
    const out: string[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        out.push(
          await new Promise<string>((resolve) =>
            client.makeUnaryRequest(
              "/machine.MachineService/Version",
              identity,
              identity,
              Buffer.alloc(0),
              new grpc.Metadata(),
              (err, res) => resolve(err ? grpc.status[err.code] : res!.toString()),
            ),
          ),
        );
      }
    } finally {
      client.close();
    }
    return out;
  };
  assert.deepEqual(await verdicts(["clientAuth", "serverAuth"]), [
    "UNAUTHENTICATED",
    "UNAUTHENTICATED",
    "UNAUTHENTICATED",
  ]);
  assert.deepEqual(await verdicts(["clientAuth"]), ["os:reader", "os:reader", "os:reader"]);
});

test("an impersonator's talos-role metadata replaces its roles; RBAC off grants all roles", async () => {
  const port = await serve({ checkExtKeyUsage: true, enableRbac: true });
  assert.equal(await call(port, ["os:impersonator"], ["clientAuth"], { "talos-role": "os:operator" }), "os:operator");
  const open = await serve({ checkExtKeyUsage: true, enableRbac: false });
  assert.match(await call(open, ["os:reader"], ["clientAuth"]), /os:admin/);
});

test("expired certificates and certificates from another CA are refused in the handshake", async () => {
  const port = await serve({ checkExtKeyUsage: true, enableRbac: true });
  const twoYearsAgo = new Date(Date.now() - 2 * 365 * 24 * 3600_000);
  await assert.rejects(
    call(port, ["os:admin"], ["clientAuth"], {}, { now: twoYearsAgo }),
    (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE,
  );
  const other = await generateSelfSignedCA({ organizations: ["talos"] });
  await assert.rejects(
    call(port, ["os:admin"], ["clientAuth"], {}, { issuer: other }),
    (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE,
  );
  // The same listener still serves a valid certificate.
  assert.equal(await call(port, ["os:admin"], ["clientAuth"]), "os:admin");
});

test("a method the caller's roles do not allow is refused at apid with Talos's message", async () => {
  const port = await serve({ checkExtKeyUsage: true, enableRbac: true });
  const reboot = "/machine.MachineService/Reboot";
  await assert.rejects(
    call(port, ["os:reader"], ["clientAuth"], {}, { method: reboot }),
    (e: grpc.ServiceError) => e.code === grpc.status.PERMISSION_DENIED && e.details === "not authorized",
  );
  assert.equal(await call(port, ["os:operator"], ["clientAuth"], {}, { method: reboot }), "os:operator");
  // An impersonator's asserted roles are what is checked.
  await assert.rejects(
    call(port, ["os:impersonator"], ["clientAuth"], { "talos-role": "os:reader" }, { method: reboot }),
    (e: grpc.ServiceError) => e.code === grpc.status.PERMISSION_DENIED,
  );
  const open = await serve({ checkExtKeyUsage: true, enableRbac: false });
  assert.match(await call(open, ["os:reader"], ["clientAuth"], {}, { method: reboot }), /os:admin/);
});

test("renewed server certificates are swapped in without re-binding", async () => {
  const issue = async (issuer: CertificateAuthority) =>
    issueCertificate(issuer, {
      commonName: "node",
      ipAddresses: ["127.0.0.1"],
      extKeyUsage: ["serverAuth"],
      lifetimeMs: 3600_000,
    });
  const first = await issue(ca);
  const front = await listen({ kind: "maintenance", serverCert: first.certPem, serverKey: first.keyPem });
  const ping = (trust: CertificateAuthority) => {
    const client = new grpc.Client(`127.0.0.1:${front.port()}`, grpc.credentials.createSsl(Buffer.from(trust.certPem)));
    return new Promise<string>((resolve, reject) =>
      client.makeUnaryRequest("/machine.MachineService/Version", identity, identity, Buffer.alloc(0), (err, res) => {
        client.close();
        if (err) reject(err);
        else resolve(res!.toString());
      }),
    );
  };
  // In maintenance every caller is a reader.
  assert.equal(await ping(ca), "os:reader");
  const otherCA = await generateSelfSignedCA({ organizations: ["talos"] });
  const second = await issue(otherCA);
  front.update({ kind: "maintenance", serverCert: second.certPem, serverKey: second.keyPem });
  assert.equal(await ping(otherCA), "os:reader");
  await assert.rejects(ping(ca));
});

test("a caller on apid's unix socket holds the roles in its talos-role metadata, none without", async () => {
  const { socketCaller } = await import("../../../agent/src/apid/credentials.js");
  const md = new grpc.Metadata();
  md.add("talos-role", "os:reader");
  md.add("talos-role", "os:operator");
  // socketCaller reads only the metadata of the call.
  assert.deepEqual(socketCaller({ metadata: md } as never).roles, ["os:reader", "os:operator"]);
  assert.deepEqual(socketCaller({ metadata: new grpc.Metadata() } as never).roles, []);
});
