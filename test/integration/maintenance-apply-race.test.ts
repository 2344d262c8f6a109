// Two configurations applied at the same moment in maintenance mode: both are
// accepted, and the node ends up running the one it stored (not one config active
// and the other on disk).
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { eventually, freePort, startSandbox } from "./helpers/sandbox.js";

test("concurrent maintenance applies: the stored and the active configuration are the same", async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-race-"));
  const port = await freePort();
  const sandbox = startSandbox(stateDir, port, ["--apid-in-process"]);
  const clients: NodeClient[] = [];
  try {
    const generated = await generateConfigs({
      clusterName: "race",
      endpoint: "https://127.0.0.1:6443",
      installDisk: "",
    });
    const insecure = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "insecure" } });
    clients.push(insecure);
    await eventually(() => insecure.disks());
    const first = generated.controlplane;
    const second = `${generated.controlplane}# the second one\n`;
    await Promise.all([insecure.applyConfiguration(first), insecure.applyConfiguration(second)]);

    const ctx = parseTalosconfig(generated.talosconfig);
    const admin = new NodeClient({
      endpoint: `127.0.0.1:${port}`,
      credentials: { kind: "mtls", ca: ctx.ca, crt: ctx.crt, key: ctx.key },
    });
    clients.push(admin);
    await eventually(() => admin.version());
    const stored = readFileSync(path.join(stateDir, "system", "state", "config.yaml"), "utf8");
    const active = (await admin.resourceGet("config", "MachineConfigs.config.talos.dev", "v1alpha1")) as {
      resource: { spec: { yaml_spec: string } };
    };
    assert.equal(active.resource.spec.yaml_spec, stored);
    // machined applies them in the order their messages reach it; two calls in flight at once can reach it in either order.
    assert.ok(stored === first || stored === second, "the stored configuration is one of the two applied");
  } finally {
    for (const c of clients) c.close();
    await sandbox.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
});
