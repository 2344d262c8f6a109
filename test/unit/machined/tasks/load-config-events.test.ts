// The platform events of loadConfig, at the moments of Talos's acquire controller: the stored
// configuration and the platform's are "config loaded"; none is "activate" before maintenance
// mode is served, then "config loaded" once one is applied.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { loadConfig } from "../../../../agent/src/machined/tasks/state.js";
import { pathsAt } from "../../../../agent/src/sys/paths.js";

/** loadConfig's runtime: `stored` on STATE, `fromPlatform` offered; the steps it took, in order. */
async function load(t: { after(fn: () => void): void }, stored?: string, fromPlatform?: string) {
  const root = mkdtempSync(path.join(os.tmpdir(), "basalt-load-config-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const paths = pathsAt(root);
  if (stored !== undefined) {
    mkdirSync(path.dirname(paths.configFile), { recursive: true });
    writeFileSync(paths.configFile, stored);
  }
  const steps: string[] = [];
  const r = {
    paths,
    configText: undefined as string | undefined,
    platformConfig: async (wantConfig: boolean) => {
      steps.push(`platformConfig(${wantConfig})`);
      return fromPlatform;
    },
    maintenance: async () => {
      steps.push("maintenance");
      return "applied";
    },
    platformEvent: (e: { type: string }) => steps.push(e.type),
  };
  await loadConfig(r);
  return { text: r.configText, steps };
}

test("a stored configuration: config loaded", async (t) => {
  assert.deepEqual(await load(t, "stored", "platform"), {
    text: "stored",
    steps: ["platformConfig(false)", "talos.prov.config.loaded"],
  });
});

test("the platform's configuration: config loaded", async (t) => {
  assert.deepEqual(await load(t, undefined, "platform"), {
    text: "platform",
    steps: ["platformConfig(true)", "talos.prov.config.loaded"],
  });
});

test("none: activate before maintenance mode, config loaded after the apply", async (t) => {
  assert.deepEqual(await load(t), {
    text: "applied",
    steps: ["platformConfig(true)", "activate", "maintenance", "talos.prov.config.loaded"],
  });
});
