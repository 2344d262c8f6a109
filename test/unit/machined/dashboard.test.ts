import assert from "node:assert/strict";
import { test } from "node:test";
import { renderConsoleSummary } from "../../../agent/src/machined/console-summary.js";
import { dashboardDisabled, dashboardService, drawSummaryUntil } from "../../../agent/src/machined/dashboard.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import type { VirtualTerminals } from "../../../agent/src/sys/vt.js";

const set = (state: ResourceState, namespace: string, type: string, id: string, spec: unknown) => state.modify(namespace, type, id, "test", () => spec);

function runningNode(): ResourceState {
  const state = new ResourceState();
  set(state, "runtime", "MachineStatuses.runtime.talos.dev", "machine", { stage: "running", status: { ready: true, unmetConditions: [] } });
  set(state, "runtime", "MountStatuses.runtime.talos.dev", "STATE", { source: "/dev/vda5", target: "/system/state", filesystemType: "xfs", encrypted: false });
  set(state, "runtime", "MountStatuses.runtime.talos.dev", "EPHEMERAL", { source: "/dev/vda6", target: "/var", filesystemType: "xfs", encrypted: true, encryptionProviders: ["luks2"] });
  set(state, "config", "MachineTypes.config.talos.dev", "machine-type", "controlplane");
  set(state, "cluster", "Infos.cluster.talos.dev", "current", { clusterId: "x", clusterName: "journey" });
  set(state, "hardware", "SystemInformations.hardware.talos.dev", "systeminformation", { uuid: "0f1e2d3c-0000-4000-8000-000000000001" });
  set(state, "network", "HostnameStatuses.net.talos.dev", "hostname", { hostname: "talos-abc-def", domainname: "" });
  set(state, "network", "NodeAddresses.net.talos.dev", "routed", { addresses: ["10.0.2.15/24", "172.20.0.2/24"] });
  set(state, "network", "NodeAddresses.net.talos.dev", "routed-no-k8s", { addresses: ["172.20.0.2/24", "10.0.2.15/24"] });
  const route = (id: string, dst: string, gateway: string) =>
    set(state, "network", "RouteStatuses.net.talos.dev", id, { family: gateway.includes(":") ? "inet6" : "inet4", dst, src: "", gateway, table: "main", priority: 1024, scope: "global", type: "unicast", flags: "", protocol: "dhcp" });
  route("inet4/10.0.2.2//1024", "", "10.0.2.2");
  route("inet6/fe80::2//1024", "", "fe80::2");
  route("inet4//10.0.2.0/24/1024", "10.0.2.0/24", "");
  set(state, "network", "NetworkStatuses.net.talos.dev", "status", { addressReady: true, connectivityReady: true, hostnameReady: true, etcFilesReady: true });
  set(state, "network", "ResolverStatuses.net.talos.dev", "resolvers", { dnsServers: ["10.0.2.3"] });
  set(state, "network", "TimeServerStatuses.net.talos.dev", "timeservers", { timeServers: [] });
  return state;
}

test("the summary of a running node: Talos's fields, routed-no-k8s addresses sorted, default-route gateways IPv4 first, <none> for no NTP server", () => {
  assert.equal(
    renderConsoleSummary(runningNode(), { version: "v1.7.6+basalt.0.1.0", apiPort: 50000 }),
    [
      "talos-abc-def (v1.7.6+basalt.0.1.0)",
      "",
      "UUID       0f1e2d3c-0000-4000-8000-000000000001",
      "CLUSTER    journey",
      "STAGE      Running",
      "READY      True",
      "TYPE       controlplane",
      "STATE      OK",
      "EPHEMERAL  OK - encrypted (luks2)",
      "",
      "HOST          talos-abc-def",
      "IP            10.0.2.15/24, 172.20.0.2/24",
      "GW            10.0.2.2, fe80::2",
      "CONNECTIVITY  OK",
      "DNS           10.0.2.3",
      "NTP           <none>",
      "",
    ].join("\n"),
  );
});

test("before anything is known every field reads n/a", () => {
  const text = renderConsoleSummary(new ResourceState(), { version: "v1", apiPort: 50000 });
  assert.equal(text.split("\n")[0], "n/a (v1)");
  assert.equal(text.match(/ n\/a$/gm)?.length, 13);
  assert.doesNotMatch(text, /apply-config/);
});

test("in maintenance it says how to apply a configuration, and lists unmet conditions", () => {
  const state = new ResourceState();
  set(state, "runtime", "MachineStatuses.runtime.talos.dev", "machine", { stage: "maintenance", status: { ready: false, unmetConditions: [{ name: "network", reason: "waiting on: address" }] } });
  set(state, "network", "NodeAddresses.net.talos.dev", "routed", { addresses: ["fd00::5/64"] });
  const text = renderConsoleSummary(state, { version: "v1", apiPort: 51000 });
  assert.match(text, /^STAGE +Maintenance$/m);
  assert.match(text, /^READY +False$/m);
  assert.ok(text.endsWith("waiting for configuration; upload it using talosctl:\n  talosctl apply-config --insecure --nodes [fd00::5]:51000 --file <config.yaml>\n\nunmet conditions:\n  network: waiting on: address\n"), text);
});

test("in maintenance after a failed install it says why, above how to apply the configuration again; not in other stages", () => {
  const state = new ResourceState();
  set(state, "runtime", "MachineStatuses.runtime.talos.dev", "machine", { stage: "maintenance", status: { ready: false, unmetConditions: [] } });
  set(state, "network", "NodeAddresses.net.talos.dev", "routed", { addresses: ["10.0.2.15/24"] });
  const text = renderConsoleSummary(state, { version: "v1", apiPort: 50000, installFailure: "the system disk has no STATE partition" });
  assert.ok(
    text.endsWith(
      "\nthe last install failed, so the node is still in maintenance: the system disk has no STATE partition\nfix the cause, then apply the configuration again\n\n" +
        "waiting for configuration; upload it using talosctl:\n  talosctl apply-config --insecure --nodes 10.0.2.15 --file <config.yaml>\n",
    ),
    text,
  );
  set(state, "runtime", "MachineStatuses.runtime.talos.dev", "machine", { stage: "installing", status: { ready: false, unmetConditions: [] } });
  assert.doesNotMatch(renderConsoleSummary(state, { version: "v1", apiPort: 50000, installFailure: "x" }), /install failed/);
});

class FakeTerminals implements VirtualTerminals {
  readonly calls: string[] = [];
  readonly drawn: string[] = [];
  failDraw: Error | undefined;
  draw(tty: number, text: string): void {
    if (this.failDraw) throw this.failDraw;
    this.calls.push(`draw ${tty}`);
    this.drawn.push(text);
  }
  activate(tty: number, kernelTty: number): void {
    this.calls.push(`activate ${tty} kmsg ${kernelTty}`);
  }
}

const turn = () => new Promise((r) => setImmediate(r));

test("the summary is drawn on tty2 at once and again when an input changes (one draw per burst), not after the stop", async () => {
  const state = runningNode();
  const terminals = new FakeTerminals();
  const ac = new AbortController();
  const running = drawSummaryUntil({ state, terminals, version: "v1", apiPort: 50000 }, ac.signal);
  await turn();
  assert.deepEqual(terminals.calls, ["draw 2"]);
  set(state, "network", "HostnameStatuses.net.talos.dev", "hostname", { hostname: "journey-node", domainname: "" });
  set(state, "runtime", "MachineStatuses.runtime.talos.dev", "machine", { stage: "rebooting", status: { ready: false, unmetConditions: [] } });
  await turn();
  assert.equal(terminals.drawn.length, 2);
  assert.match(terminals.drawn[1]!, /^journey-node \(v1\)\n/);
  assert.match(terminals.drawn[1]!, /^STAGE +Rebooting$/m);
  set(state, "network", "Unrelated.net.talos.dev", "x", {});
  await turn();
  assert.equal(terminals.drawn.length, 2, "a kind the summary does not read draws nothing");
  ac.abort();
  await running;
  set(state, "network", "HostnameStatuses.net.talos.dev", "hostname", { hostname: "later", domainname: "" });
  await turn();
  assert.equal(terminals.drawn.length, 2);
});

test("a draw that fails ends the run with its error (the supervisor restarts the service)", async () => {
  const terminals = new FakeTerminals();
  terminals.failDraw = new Error("no /dev/tty2");
  await assert.rejects(drawSummaryUntil({ state: new ResourceState(), terminals, version: "v1", apiPort: 50000 }, new AbortController().signal), /no \/dev\/tty2/);
});

test("the service shows tty2 before it runs and tty1 after it stops, kernel messages kept on tty1", async () => {
  const terminals = new FakeTerminals();
  const def = dashboardService({ state: new ResourceState(), terminals, version: "v1", apiPort: 50000 });
  assert.equal(def.id, "dashboard");
  assert.deepEqual(def.dependsOn, ["machined"]);
  await def.pre!();
  await def.post!();
  assert.deepEqual(terminals.calls, ["activate 2 kmsg 1", "activate 1 kmsg 1"]);
});

test("talos.dashboard.disabled is read as Go's ParseBool reads it, the last value winning", () => {
  const cmdline = (...values: string[]) => new Map([["talos.dashboard.disabled", values]]);
  assert.equal(dashboardDisabled(new Map()), false);
  for (const v of ["1", "t", "true", "TRUE", "True"]) assert.equal(dashboardDisabled(cmdline(v)), true, v);
  for (const v of ["0", "false", "yes", "on", ""]) assert.equal(dashboardDisabled(cmdline(v)), false, v);
  assert.equal(dashboardDisabled(cmdline("1", "0")), false);
});
