// The sandbox with apid inside machined's process (--apid-in-process): same
// observable behaviour through maintenance, apply-config and mutual TLS.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";

const sandboxJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../agent/src/cmd/sandbox.js");

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

async function eventually<T>(fn: () => Promise<T>, attempts = 100): Promise<T> {
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await fn();
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw last;
}

test("apid in machined's process: maintenance, apply, mTLS", async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-inproc-"));
  const port = await freePort();
  const child = spawn(process.execPath, [sandboxJs, "--state-dir", stateDir, "--apid-listen", `127.0.0.1:${port}`, "--apid-in-process"], { stdio: "ignore" });
  const clients: NodeClient[] = [];
  try {
    const generated = await generateConfigs({ clusterName: "inproc", endpoint: "https://127.0.0.1:6443", installDisk: "" });
    const insecure = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "insecure" } });
    clients.push(insecure);
    await eventually(() => insecure.disks());
    await assert.rejects(insecure.version(), (e: grpc.ServiceError) => e.code === grpc.status.UNIMPLEMENTED);
    await insecure.applyConfiguration(generated.controlplane);

    const ctx = parseTalosconfig(generated.talosconfig);
    const admin = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "mtls", ca: ctx.ca, crt: ctx.crt, key: ctx.key } });
    clients.push(admin);
    await eventually(() => admin.version());
    const services = (await admin.serviceList()) as { messages: { services: { id: string; state: string }[] }[] };
    assert.deepEqual(
      services.messages[0]!.services.map((s) => [s.id, s.state]),
      [["apid", "Running"], ["machined", "Running"]],
    );
  } finally {
    for (const c of clients) c.close();
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
    rmSync(stateDir, { recursive: true, force: true });
  }
});
