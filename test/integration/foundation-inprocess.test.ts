// The sandbox with apid inside machined's process (--apid-in-process): same
// observable behaviour through maintenance, apply-config and mutual TLS.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { eventually, freePort, startSandbox } from "./helpers/sandbox.js";

test("apid in machined's process: maintenance, apply, mTLS", async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-inproc-"));
  const port = await freePort();
  const sandbox = startSandbox(stateDir, port, ["--apid-in-process"]);
  const clients: NodeClient[] = [];
  try {
    const generated = await generateConfigs({
      clusterName: "inproc",
      endpoint: "https://127.0.0.1:6443",
      installDisk: "",
    });
    const insecure = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "insecure" } });
    clients.push(insecure);
    await eventually(() => insecure.disks());
    await assert.rejects(insecure.version(), (e: grpc.ServiceError) => e.code === grpc.status.UNIMPLEMENTED);
    await insecure.applyConfiguration(generated.controlplane);

    const ctx = parseTalosconfig(generated.talosconfig);
    const admin = new NodeClient({
      endpoint: `127.0.0.1:${port}`,
      credentials: { kind: "mtls", ca: ctx.ca, crt: ctx.crt, key: ctx.key },
    });
    clients.push(admin);
    await eventually(() => admin.version());
    // A control plane also runs trustd, which starts once its certificate is published.
    await eventually(async () => {
      const services = (await admin.serviceList()) as { messages: { services: { id: string; state: string }[] }[] };
      assert.deepEqual(
        services.messages[0]!.services.map((s) => [s.id, s.state]),
        [
          ["apid", "Running"],
          ["machined", "Running"],
          ["syslogd", "Running"],
          ["trustd", "Running"],
        ],
      );
    });
  } finally {
    for (const c of clients) c.close();
    await sandbox.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
});
