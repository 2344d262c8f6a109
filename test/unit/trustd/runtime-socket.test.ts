import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { serviceDefinition } from "../../../agent/src/api/index.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import { ApiCertificatesId, ApiCertificatesType, OSRootSecretsId, OSRootSecretsType, SECRETS_NAMESPACE, TrustdCertificatesId, TrustdCertificatesType } from "../../../agent/src/resources/catalog/secrets.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import { serveTrustdRuntime } from "../../../agent/src/trustd/runtime-socket.js";
import { runtimeClient } from "../../../agent/src/grpc/resource-watch.js";

const pem = (label: string) => `-----BEGIN ${label}-----\nAAAA\n-----END ${label}-----\n`;

test("trustd's runtime socket serves its two resources read-only and nothing else", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-trustd-rt-"));
  const socket = path.join(dir, "run", "trustd", "runtime.sock");
  const state = new ResourceState();
  registerCatalog(state);
  const pair = { crt: pem("CERTIFICATE"), key: pem("PRIVATE KEY") };
  state.modify(SECRETS_NAMESPACE, OSRootSecretsType, OSRootSecretsId, "test", () => ({ issuingCA: pair, acceptedCAs: [], certSANIPs: [], certSANDNSNames: [], token: "abc.def" }));
  state.modify(SECRETS_NAMESPACE, TrustdCertificatesType, TrustdCertificatesId, "test", () => ({ server: pair, acceptedCAs: [] }));
  state.modify(SECRETS_NAMESPACE, ApiCertificatesType, ApiCertificatesId, "test", () => ({ server: pair, acceptedCAs: [] }));
  const rt = await serveTrustdRuntime(state, socket);
  const State = grpc.makeGenericClientConstructor(serviceDefinition("cosi.resource.State"), "State");
  const client = new State(`unix:${socket}`, grpc.credentials.createInsecure()) as unknown as Record<string, (...a: unknown[]) => unknown>;
  t.after(async () => {
    (client as unknown as grpc.Client).close();
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  });
  assert.equal(statSync(socket).mode & 0o777, 0o600);

  const get = (type: string, id: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) =>
      client["Get"]!({ namespace: SECRETS_NAMESPACE, type, id }, new grpc.Metadata(), (err: Error | null, res: Record<string, unknown>) => (err ? reject(err) : resolve(res))),
    );
  const root = (await get(OSRootSecretsType, OSRootSecretsId)) as { resource: { metadata: { id: string } } };
  assert.equal(root.resource.metadata.id, OSRootSecretsId);
  await get(TrustdCertificatesType, TrustdCertificatesId);
  await assert.rejects(get(ApiCertificatesType, ApiCertificatesId), (err: grpc.ServiceError) => err.code === grpc.status.PERMISSION_DENIED);
  await assert.rejects(get(OSRootSecretsType, "other"), (err: grpc.ServiceError) => err.code === grpc.status.PERMISSION_DENIED);

  const list = client["List"]!({ namespace: SECRETS_NAMESPACE, type: OSRootSecretsType }, new grpc.Metadata()) as grpc.ClientReadableStream<unknown>;
  const listErr = await new Promise<grpc.ServiceError>((resolve) => {
    list.on("data", () => undefined);
    list.on("error", resolve);
  });
  assert.equal(listErr.code, grpc.status.PERMISSION_DENIED);

  // The watch trustd uses gets the certificate.
  const { client: watcher, close } = runtimeClient(socket);
  t.after(close);
  const stream = watcher.Watch({ namespace: SECRETS_NAMESPACE, type: TrustdCertificatesType, id: TrustdCertificatesId, options: {}, api_version: 1 }, new grpc.Metadata());
  type Events = { event?: { resource?: { metadata?: { id?: string } } }[] };
  // The first message may carry no events (the stream opening); wait for the first that does.
  const first = await new Promise<Events>((resolve) => stream.on("data", (m: Events) => m.event?.length && resolve(m)));
  stream.cancel();
  stream.on("error", () => undefined);
  assert.equal(first.event?.[0]?.resource?.metadata?.id, TrustdCertificatesId);
});
