// One call never breaks another: an apply whose error text is hundreds of KB
// (5000 documents of unknown kinds) is answered with a cut message, the node keeps
// answering right after, and repeated calls leave no listener behind.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { NodeClient } from "../../agent/src/client/client.js";
import { maxStatusMessageBytes } from "../../agent/src/grpc/status.js";
import { eventually, freePort, startSandbox } from "./helpers/sandbox.js";

const unknownDocuments = (n: number) =>
  Array.from({ length: n }, (_, i) => `apiVersion: v1alpha1\nkind: NoSuchKind${i}\nname: doc-${i}\n`).join("---\n");

test("a 5000-document apply of unknown kinds gets a cut error and the node keeps answering", {
  timeout: 120_000,
}, async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-resilience-"));
  const port = await freePort();
  const sandbox = startSandbox(stateDir, port);
  const client = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "insecure" } });
  try {
    await eventually(() => client.disks());
    const big = unknownDocuments(5000);
    for (let round = 0; round < 12; round++) {
      const err = (await client.applyConfiguration(big).then(
        () => assert.fail("an apply of unknown kinds was accepted"),
        (e: grpc.ServiceError) => e,
      )) as grpc.ServiceError;
      assert.ok(
        [grpc.status.INVALID_ARGUMENT, grpc.status.UNKNOWN].includes(err.code),
        `round ${round}: ${grpc.status[err.code]}: ${err.details.slice(0, 200)}`,
      );
      assert.ok(Buffer.byteLength(err.details) <= maxStatusMessageBytes, `${Buffer.byteLength(err.details)} bytes`);
      assert.match(err.details, /more characters cut\)$/);
      // The node answers right away, over the same apid connection to machined.
      const started = Date.now();
      await client.disks();
      assert.ok(Date.now() - started < 2000, `answered ${Date.now() - started} ms after the failed apply`);
    }
    assert.doesNotMatch(sandbox.output(), /MaxListenersExceededWarning/);
    assert.doesNotMatch(sandbox.output(), /Connection dropped|resource watch failed/);
  } finally {
    client.close();
    await sandbox.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
});

test("apid whose port is taken at start keeps trying and serves once the port is free", {
  timeout: 120_000,
}, async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-busy-port-"));
  const port = await freePort();
  // What once held :50000 on a node: a socket of the readiness probe connected to itself.
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(port, "127.0.0.1", resolve));
  const sandbox = startSandbox(stateDir, port);
  const client = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "insecure" } });
  try {
    await eventually(() =>
      /binding the api listener failed, retrying/.test(sandbox.output())
        ? Promise.resolve()
        : Promise.reject(new Error("no bind failure yet")),
    );
    await new Promise<void>((resolve) => holder.close(() => resolve()));
    await eventually(() => client.disks());
    assert.match(sandbox.output(), /api listener ready/);
  } finally {
    holder.close();
    client.close();
    await sandbox.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
});
