import assert from "node:assert/strict";
import { before, test } from "node:test";
import { parseTalosconfig } from "../../../../agent/src/client/talosconfig.js";
import type { ConfigBundle } from "../../../../agent/src/config/bundle.js";
import { generateConfigs } from "../../../../agent/src/config/generate/index.js";
import { loadConfig } from "../../../../agent/src/config/load.js";
import { ConflictError, InvalidInputError } from "../../../../agent/src/errors.js";
import {
  contextName,
  generateClientConfiguration,
  parseRoles,
} from "../../../../agent/src/machined/rpc/generate-client-config.js";
import { parseCertificatePem } from "../../../../agent/src/pki/index.js";

let controlplane: ConfigBundle;
let worker: ConfigBundle;
let caPem = "";

before(async () => {
  const generated = await generateConfigs({ clusterName: "unit", endpoint: "https://10.5.0.2:6443", installDisk: "" });
  controlplane = loadConfig(generated.controlplane);
  worker = loadConfig(generated.worker);
  caPem = generated.secrets.certs.os.crt;
});

type Reply = { messages: { ca: Buffer; crt: Buffer; key: Buffer; talosconfig: Buffer }[] };
const handler = (config: ConfigBundle | undefined) => generateClientConfiguration({ activeConfig: () => config });

test("a reader talosconfig: certificate with O=os:reader for crt_ttl, signed by the OS CA, context reader@<cluster>", async () => {
  const reply = (await handler(controlplane)({ roles: ["os:reader"], crt_ttl: { seconds: 3600 } })) as Reply;
  const m = reply.messages[0]!;
  assert.equal(m.ca.toString(), caPem);
  const cert = parseCertificatePem(m.crt);
  assert.equal(cert.subjectName.getField("O").join(","), "os:reader");
  const lifetime = cert.notAfter.getTime() - cert.notBefore.getTime();
  assert.ok(Math.abs(lifetime - 3600_000) <= 60_000, `lifetime ${lifetime} ms`);
  assert.ok(await cert.verify({ publicKey: parseCertificatePem(caPem), signatureOnly: true }), "signed by the OS CA");
  const ctx = parseTalosconfig(m.talosconfig.toString());
  assert.equal(ctx.name, "reader@unit");
  assert.deepEqual(ctx.endpoints, []);
  assert.equal(ctx.crt, m.crt.toString());
  assert.equal(ctx.key, m.key.toString());
  assert.equal(ctx.ca, caPem);
});

test("roles are trimmed, deduplicated and sorted; several roles name the context after the cluster", async () => {
  assert.deepEqual(parseRoles([" os:reader", "", "os:admin", "os:reader", "os:custom"]), [
    "os:admin",
    "os:custom",
    "os:reader",
  ]);
  assert.equal(contextName(["os:admin", "os:reader"], "c1"), "c1");
  assert.equal(contextName(["os:etcd:backup"], "c1"), "etcd:backup@c1");
  const reply = (await handler(controlplane)({
    roles: ["os:reader", "os:operator"],
    crt_ttl: { seconds: 60 },
  })) as Reply;
  assert.equal(
    parseCertificatePem(reply.messages[0]!.crt).subjectName.getField("O").join(","),
    "os:operator,os:reader",
  );
  assert.equal(parseTalosconfig(reply.messages[0]!.talosconfig.toString()).name, "unit");
});

test("refusals: a crt_ttl that is not positive, a worker node, no configuration", async () => {
  await assert.rejects(
    handler(controlplane)({ roles: ["os:admin"] }),
    (e: Error) => e instanceof InvalidInputError && e.message === "crt_ttl should be positive",
  );
  await assert.rejects(handler(controlplane)({ roles: ["os:admin"], crt_ttl: { seconds: -5 } }), InvalidInputError);
  await assert.rejects(
    handler(worker)({ roles: ["os:admin"], crt_ttl: { seconds: 60 } }),
    (e: Error) =>
      e instanceof ConflictError &&
      e.message === "client configuration (talosconfig) can't be generated on worker nodes",
  );
  await assert.rejects(handler(undefined)({ roles: ["os:admin"], crt_ttl: { seconds: 60 } }), ConflictError);
});
