// .machine.kernel.modules, .machine.files and .machine.env through the real sandbox (machined
// + apid as child processes, mutual TLS): what the sandbox records for modules, the files as
// written under its root, and the environment of the processes machined starts, read from /proc.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { parseAllDocuments } from "yaml";
import { NodeClient } from "../../agent/src/client/client.js";
import type { GeneratedConfigs } from "../../agent/src/config/generate/index.js";
import { eventually, type SandboxProcess } from "./helpers/sandbox.js";
import { startConfiguredSandbox } from "./helpers/configured-sandbox.js";

const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-machinecfg-"));
let sandbox: SandboxProcess;
let controlplane = "";
const clients: NodeClient[] = [];
let admin: NodeClient;

const files = [
  { op: "create", path: "/var/lib/example/settings.conf", content: "a=1\n", permissions: 0o600 },
  { op: "append", path: "/etc/motd", content: "appended line", permissions: 0o644 },
];

function configWith(machine: Record<string, unknown>): string {
  const docs = parseAllDocuments(controlplane);
  for (const [key, value] of Object.entries(machine)) {
    if (value === undefined) docs[0]!.deleteIn(["machine", key]);
    else docs[0]!.setIn(["machine", key], value);
  }
  return docs.map((d) => d.toString()).join("---\n");
}

/** The environment of machined's child process whose command line contains `word` (apid). */
function childEnvironment(word: string): Map<string, string> {
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const ppid = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[1];
      if (Number(ppid) !== sandbox.child.pid) continue;
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes(word)) continue;
      const entries = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter(Boolean);
      return new Map(entries.map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]));
    } catch {
      // The process ended between listing and reading.
    }
  }
  throw new Error(`no child process of the sandbox runs ${word}`);
}

before(async () => {
  // The image's file that `append` extends.
  mkdirSync(path.join(stateDir, "etc"), { recursive: true });
  writeFileSync(path.join(stateDir, "etc", "motd"), "from the image");
  const config = (generated: GeneratedConfigs) => {
    controlplane = generated.controlplane;
    return configWith({
      kernel: {
        modules: [
          { name: "br_netfilter" },
          { name: "drbd", parameters: ["usermode_helper=disabled", "minor_count=8"] },
        ],
      },
      files,
      env: { https_proxy: "http://proxy.example:3128", BASALT_EXAMPLE: "one two" },
    });
  };
  ({ sandbox, admin } = await startConfiguredSandbox({ clusterName: "machinecfg", stateDir, config }));
  clients.push(admin);
});

after(async () => {
  for (const c of clients) c.close();
  await sandbox.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

type Listed = { resource?: { metadata: { id: string }; spec: { yaml_spec: string } } };
const specs = async () =>
  new Map(
    ((await admin.resourceList("runtime", "KernelModuleSpecs.runtime.talos.dev")) as Listed[]).flatMap((m) =>
      m.resource ? [[m.resource.metadata.id, m.resource.spec.yaml_spec] as const] : [],
    ),
  );

test("kernel modules: KernelModuleSpecs from the config, each load recorded with its parameters; a live change loads the new one", async () => {
  await eventually(async () => assert.deepEqual([...(await specs()).keys()].sort(), ["br_netfilter", "drbd"]));
  assert.equal(
    (await specs()).get("drbd"),
    "string: drbd\nparameters:\n    - usermode_helper=disabled\n    - minor_count=8\n",
  );
  await eventually(async () =>
    assert.equal(
      readFileSync(path.join(stateDir, "kernel-modules", "drbd"), "utf8"),
      "usermode_helper=disabled\nminor_count=8\n",
    ),
  );
  assert.equal(readFileSync(path.join(stateDir, "kernel-modules", "br_netfilter"), "utf8"), "");

  const reply = (await admin.applyConfiguration(
    configWith({
      kernel: { modules: [{ name: "dummy", parameters: ["numdummies=2"] }] },
      files,
      env: { https_proxy: "http://proxy.example:3128", BASALT_EXAMPLE: "one two" },
    }),
    { mode: 1 },
  )) as { messages: { mode: number }[] };
  assert.equal(reply.messages[0]!.mode, 2, "applied without a reboot, as Talos applies .machine.kernel");
  await eventually(async () => assert.deepEqual([...(await specs()).keys()], ["dummy"]));
  await eventually(async () =>
    assert.equal(readFileSync(path.join(stateDir, "kernel-modules", "dummy"), "utf8"), "numdummies=2\n"),
  );
});

test("files: create under /var with its mode; append to an existing file outside /var written to /var/<path>", async () => {
  await eventually(async () =>
    assert.equal(readFileSync(path.join(stateDir, "var/lib/example/settings.conf"), "utf8"), "a=1\n"),
  );
  assert.equal(statSync(path.join(stateDir, "var/lib/example/settings.conf")).mode & 0o7777, 0o600);
  assert.equal(readFileSync(path.join(stateDir, "var/etc/motd"), "utf8"), "from the image\nappended line");
  assert.equal(readFileSync(path.join(stateDir, "etc/motd"), "utf8"), "from the image");
});

test("env: apid gets .machine.env without the proxy variables", async () => {
  const apid = await eventually(async () => childEnvironment("apid"));
  assert.equal(apid.get("BASALT_EXAMPLE"), "one two");
  assert.equal(apid.has("https_proxy"), false);
});

test("files: a create outside /var pauses the boot with Talos's message; an apply-config that fixes it takes over and the next boot writes the files", async () => {
  const bad = configWith({ files: [{ op: "create", path: "/etc/new.conf", content: "x", permissions: 0o644 }] });
  await admin.applyConfiguration(bad, { mode: 0 });
  await eventually(
    async () =>
      assert.match(
        sandbox.output(),
        /writeUserFiles failed, rebooting in 5 minutes\. You can use talosctl apply-config or talosctl edit mc to fix the issues, error:\\ncreate operation not allowed outside of \/var: \\"\/etc\/new.conf\\"/,
      ),
    300,
  );
  const fixed = configWith({
    files: [{ op: "create", path: "/var/fixed.conf", content: "fixed\n", permissions: 0o644 }],
  });
  await eventually(() => admin.applyConfiguration(fixed, { mode: 0 }), 300);
  await eventually(
    async () => assert.equal(readFileSync(path.join(stateDir, "var/fixed.conf"), "utf8"), "fixed\n"),
    300,
  );
  await eventually(() => admin.version(), 300);
});
