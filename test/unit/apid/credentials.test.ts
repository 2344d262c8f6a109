// apid's authentication over real TLS handshakes: client certificate roles (O),
// the clientAuth-only rule, impersonation and RBAC off.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { authenticate, serverCredentials, type ListenerMode } from "../../../agent/src/apid/credentials.js";
import { generateSelfSignedCA, issueCertificate, type CertificateAuthority, type ExtKeyUsageName } from "../../../agent/src/pki/index.js";
import { tlsKeyPem } from "../../../agent/src/pki/tls.js";

const identity = (b: Buffer) => b;
let ca: CertificateAuthority;
const servers: grpc.Server[] = [];

before(async () => {
  ca = await generateSelfSignedCA({ organizations: ["talos"] });
});
after(() => {
  for (const s of servers) s.forceShutdown();
});

/** Like serve: Version and Reboot answer with the caller's roles. */
const registerAll = (mode: Parameters<typeof serve>[0]) => serve(mode, ["/machine.MachineService/Version", "/machine.MachineService/Reboot"]);

/** Starts a server whose methods answer with the caller's roles (or the refusal). */
async function serve(mode: Omit<ListenerMode & { kind: "mtls" }, "serverCert" | "serverKey" | "acceptedCAs" | "kind">, paths = ["/machine.MachineService/Version"]): Promise<number> {
  const server = new grpc.Server();
  servers.push(server);
  const cert = await issueCertificate(ca, { commonName: "node", ipAddresses: ["127.0.0.1"], extKeyUsage: ["serverAuth"], lifetimeMs: 3600_000 });
  const full: ListenerMode = { kind: "mtls", serverCert: cert.certPem, serverKey: cert.keyPem, acceptedCAs: [ca.certPem], ...mode };
  for (const p of paths) {
    server.register(
      p,
      (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        try {
          cb(null, Buffer.from(authenticate(full, call).roles.join(",")));
        } catch (err) {
          cb(err as grpc.ServiceError);
        }
      },
      identity,
      identity,
      "unary",
    );
  }
  return new Promise((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", serverCredentials(full), (err, port) => (err ? reject(err) : resolve(port))),
  );
}

async function call(
  port: number,
  roles: string[],
  eku: ExtKeyUsageName[],
  md: Record<string, string> = {},
  leafOpts: { issuer?: CertificateAuthority; now?: Date; method?: string } = {},
): Promise<string> {
  const leaf = await issueCertificate(leafOpts.issuer ?? ca, { organizations: roles, extKeyUsage: eku, lifetimeMs: 3600_000, ...(leafOpts.now ? { now: leafOpts.now } : {}) });
  const creds = grpc.credentials.createSsl(Buffer.from(ca.certPem), Buffer.from(tlsKeyPem(leaf.keyPem)), Buffer.from(leaf.certPem));
  const client = new grpc.Client(`127.0.0.1:${port}`, creds);
  const meta = new grpc.Metadata();
  for (const [k, v] of Object.entries(md)) meta.add(k, v);
  try {
    return await new Promise((resolve, reject) =>
      client.makeUnaryRequest(leafOpts.method ?? "/machine.MachineService/Version", identity, identity, Buffer.alloc(0), meta, (err, res) => (err ? reject(err) : resolve(res!.toString()))),
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
  await assert.rejects(call(port, ["os:admin"], ["clientAuth", "serverAuth"]), (e: grpc.ServiceError) => e.code === grpc.status.UNAUTHENTICATED);
  const lax = await serve({ checkExtKeyUsage: false, enableRbac: true });
  assert.equal(await call(lax, ["os:admin"], ["clientAuth", "serverAuth"]), "os:admin");
});

test("the clientAuth-only verdict holds for every call of the same certificate, remembered or not", async () => {
  const port = await serve({ checkExtKeyUsage: true, enableRbac: true });
  const verdicts = async (eku: ExtKeyUsageName[]) => {
    const leaf = await issueCertificate(ca, { organizations: ["os:reader"], extKeyUsage: eku, lifetimeMs: 3600_000 });
    const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createSsl(Buffer.from(ca.certPem), Buffer.from(tlsKeyPem(leaf.keyPem)), Buffer.from(leaf.certPem)));
    const out: string[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        out.push(
          await new Promise<string>((resolve) =>
            client.makeUnaryRequest("/machine.MachineService/Version", identity, identity, Buffer.alloc(0), new grpc.Metadata(), (err, res) =>
              resolve(err ? grpc.status[err.code] : res!.toString()),
            ),
          ),
        );
      }
    } finally {
      client.close();
    }
    return out;
  };
  assert.deepEqual(await verdicts(["clientAuth", "serverAuth"]), ["UNAUTHENTICATED", "UNAUTHENTICATED", "UNAUTHENTICATED"]);
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
  await assert.rejects(call(port, ["os:admin"], ["clientAuth"], {}, { now: twoYearsAgo }), (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE);
  const other = await generateSelfSignedCA({ organizations: ["talos"] });
  await assert.rejects(call(port, ["os:admin"], ["clientAuth"], {}, { issuer: other }), (e: grpc.ServiceError) => e.code === grpc.status.UNAVAILABLE);
  // The same listener still serves a valid certificate.
  assert.equal(await call(port, ["os:admin"], ["clientAuth"]), "os:admin");
});

test("a method the caller's roles do not allow is refused at apid with Talos's message", async () => {
  const port = await registerAll({ checkExtKeyUsage: true, enableRbac: true });
  const reboot = "/machine.MachineService/Reboot";
  await assert.rejects(
    call(port, ["os:reader"], ["clientAuth"], {}, { method: reboot }),
    (e: grpc.ServiceError) => e.code === grpc.status.PERMISSION_DENIED && e.details === "not authorized",
  );
  assert.equal(await call(port, ["os:operator"], ["clientAuth"], {}, { method: reboot }), "os:operator");
  // An impersonator's asserted roles are what is checked.
  await assert.rejects(call(port, ["os:impersonator"], ["clientAuth"], { "talos-role": "os:reader" }, { method: reboot }), (e: grpc.ServiceError) => e.code === grpc.status.PERMISSION_DENIED);
  const open = await registerAll({ checkExtKeyUsage: true, enableRbac: false });
  assert.match(await call(open, ["os:reader"], ["clientAuth"], {}, { method: reboot }), /os:admin/);
});

test("renewed server certificates are swapped in without re-binding", async () => {
  const { liveServerCredentials } = await import("../../../agent/src/apid/credentials.js");
  const issue = async (issuer: CertificateAuthority) =>
    issueCertificate(issuer, { commonName: "node", ipAddresses: ["127.0.0.1"], extKeyUsage: ["serverAuth"], lifetimeMs: 3600_000 });
  const first = await issue(ca);
  const live = liveServerCredentials({ kind: "maintenance", serverCert: first.certPem, serverKey: first.keyPem });
  const server = new grpc.Server();
  servers.push(server);
  server.register("/t.T/Ping", (_c: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, Buffer.from("pong")), identity, identity, "unary");
  const port: number = await new Promise((resolve, reject) => server.bindAsync("127.0.0.1:0", live.credentials, (e, p) => (e ? reject(e) : resolve(p))));
  const ping = (trust: CertificateAuthority) => {
    const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createSsl(Buffer.from(trust.certPem)));
    return new Promise<string>((resolve, reject) =>
      client.makeUnaryRequest("/t.T/Ping", identity, identity, Buffer.alloc(0), (err, res) => {
        client.close();
        if (err) reject(err);
        else resolve(res!.toString());
      }),
    );
  };
  assert.equal(await ping(ca), "pong");
  const otherCA = await generateSelfSignedCA({ organizations: ["talos"] });
  const second = await issue(otherCA);
  live.update({ kind: "maintenance", serverCert: second.certPem, serverKey: second.keyPem });
  assert.equal(await ping(otherCA), "pong");
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
