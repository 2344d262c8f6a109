// `talosctl support` (v1.7.6, go-talos-support v0.1.0) against the real sandbox, call by call:
// every RPC its node collectors make, made the way they make them, must answer, so the bundle
// is whole for the node. The files it would write are derived from the answers and compared
// with the set the node should produce (the project's tests do not run talosctl itself).

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { parse, parseAllDocuments } from "yaml";
import { NodeClient } from "../../agent/src/client/client.js";
import type { GeneratedConfigs } from "../../agent/src/config/generate/index.js";
import { eventually, type SandboxProcess } from "./helpers/sandbox.js";
import { startConfiguredSandbox } from "./helpers/configured-sandbox.js";

const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-support-"));
let sandbox: SandboxProcess;
const clients: NodeClient[] = [];
let admin: NodeClient;

before(async () => {
  // A sysctl this kernel does not have: the kernel parameter controller fails and says so in controller-runtime's log.
  const config = (generated: GeneratedConfigs) => {
    const docs = parseAllDocuments(generated.controlplane);
    docs[0]!.setIn(["machine", "sysctls"], { "basalt.nosuchparameter": "1" });
    return docs.map((d) => d.toString()).join("---\n");
  };
  ({ sandbox, admin } = await startConfiguredSandbox({ clusterName: "support", stateDir, config }));
  clients.push(admin);
  await eventually(async () =>
    assert.equal(
      ((await admin.serviceList()) as { messages: { services: { state: string }[] }[] }).messages[0]!.services.every(
        (s) => s.state === "Running",
      ),
      true,
    ),
  );
});

after(async () => {
  for (const c of clients) c.close();
  await sandbox.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

const bytes = (parts: { bytes?: Buffer }[]) => Buffer.concat(parts.map((p) => p.bytes ?? Buffer.alloc(0)));
type Listed = { resource?: { metadata: { id: string }; spec: { yaml_spec: string } } };

test("every call of the support bundle's node collectors answers; the bundle's files are exactly the node's", async () => {
  const files = new Map<string, number>();
  // talosctl's node collectors, in its order, with the requests it sends.
  files.set("dmesg.log", bytes(await admin.collect(admin.machine, "Dmesg", { follow: false, tail: false })).length);
  const controllerLog = bytes(
    await admin.collect(admin.machine, "Logs", {
      namespace: "system",
      driver: 0,
      id: "controller-runtime",
      follow: false,
      tail_lines: -1,
    }),
  ).toString();
  files.set("controller-runtime.log", controllerLog.length);
  const deps = await admin.unary<{ messages: { edges: unknown[] }[] }>(admin.inspect, "ControllerRuntimeDependencies");
  files.set("dependencies.dot", deps.messages[0]!.edges.length);
  files.set("mounts", ((await admin.mounts()) as { messages: { stats: unknown[] }[] }).messages[0]!.stats.length);
  await admin
    .read("/proc/bus/pci/devices")
    .catch((err: Error) =>
      assert.match(err.message, /no such file/, "a host without PCI: talosctl reports it and goes on"),
    );
  files.set("devices", 1);
  files.set(
    "io",
    (await admin.unary<{ messages: { devices: unknown[] }[] }>(admin.machine, "DiskStats")).messages[0]!.devices.length,
  );
  files.set(
    "processes",
    (await admin.unary<{ messages: { processes: unknown[] }[] }>(admin.machine, "Processes")).messages[0]!.processes
      .length,
  );
  files.set("summary", ((await admin.version()) as { messages: unknown[] }).messages.length);

  const definitions = ((await admin.resourceList("meta", "ResourceDefinitions.meta.cosi.dev")) as Listed[]).flatMap(
    (m) => (m.resource ? [m.resource] : []),
  );
  for (const def of definitions) {
    const spec = parse(def.spec.yaml_spec) as { type: string; defaultNamespace: string };
    const items = ((await admin.resourceList(spec.defaultNamespace, spec.type)) as Listed[]).filter((m) => m.resource);
    if (items.length > 0) files.set(`resources/${def.metadata.id}.yaml`, items.length);
  }

  // Kubernetes logs: the CRI containers of kube-system; with no CRI runtime, none (not an error).
  const cri = await admin.unary<{ messages: { containers: unknown[] }[] }>(admin.machine, "Containers", {
    namespace: "k8s.io",
    driver: 1,
  });
  assert.deepEqual(cri.messages[0]!.containers, []);

  // talosctl's ServiceInfo is ServiceList filtered by id.
  const listed = (
    (await admin.serviceList()) as { messages: { services: { id: string; events: { events: unknown[] } }[] }[] }
  ).messages[0]!.services;
  const services = listed.map((s) => s.id);
  for (const s of listed) {
    files.set(
      `service-logs/${s.id}.log`,
      bytes(
        await admin.collect(admin.machine, "Logs", {
          namespace: "system",
          driver: 0,
          id: s.id,
          follow: false,
          tail_lines: -1,
        }),
      ).length,
    );
    files.set(`service-logs/${s.id}.state`, s.events.events.length);
  }

  assert.deepEqual([...services].sort(), ["apid", "machined", "syslogd", "trustd"]);
  const resources = [...files.keys()].filter((f) => f.startsWith("resources/")).sort();
  assert.deepEqual(
    [...files.keys()].filter((f) => !f.startsWith("resources/")),
    [
      "dmesg.log",
      "controller-runtime.log",
      "dependencies.dot",
      "mounts",
      "devices",
      "io",
      "processes",
      "summary",
      ...services.flatMap((id) => [`service-logs/${id}.log`, `service-logs/${id}.state`]),
    ],
  );
  // Every resource type the sandbox fills has its file, among them these node facts.
  for (const f of [
    "machineconfigs.config.talos.dev",
    "services.v1alpha1.talos.dev",
    "kernelparamstatuses.runtime.talos.dev",
    "linkstatuses.net.talos.dev",
    "machinestatuses.runtime.talos.dev",
  ]) {
    assert.ok(resources.includes(`resources/${f}.yaml`), f);
  }
  assert.equal(
    files.get("resources/services.v1alpha1.talos.dev.yaml"),
    services.length,
    "one Service resource per service",
  );
  assert.ok(files.get("dmesg.log")! > 0 && files.get("dependencies.dot")! > 0 && files.get("processes")! > 0);

  // controller-runtime's lines are in its log (what the support bundle reads), not in machined's.
  assert.match(
    controllerLog,
    /\[basalt\] controller-runtime: controller failed .*runtime\.KernelParamSpecController.*basalt\.nosuchparameter/,
  );
  const machinedLog = readFileSync(path.join(stateDir, "var/log/machined.log"), "utf8");
  assert.doesNotMatch(machinedLog, /\[basalt\] controller-runtime:/);
});
