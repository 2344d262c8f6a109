import assert from "node:assert/strict";
import { test } from "node:test";
import { renderConsoleSummary } from "../../../agent/src/machined/console-summary.js";
import { dashboardDisabled, dashboardService, drawSummaryUntil } from "../../../agent/src/machined/dashboard.js";
import {
  composeScreen,
  followKernelLog,
  LogLines,
  maxLogLines,
  renderLogPane,
} from "../../../agent/src/machined/kernel-log-pane.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import type { VirtualTerminals } from "../../../agent/src/sys/vt.js";

const set = (state: ResourceState, namespace: string, type: string, id: string, spec: unknown) =>
  state.modify(namespace, type, id, "test", () => spec);

function runningNode(): ResourceState {
  const state = new ResourceState();
  set(state, "runtime", "MachineStatuses.runtime.talos.dev", "machine", {
    stage: "running",
    status: { ready: true, unmetConditions: [] },
  });
  set(state, "runtime", "MountStatuses.runtime.talos.dev", "STATE", {
    source: "/dev/vda5",
    target: "/system/state",
    filesystemType: "xfs",
    encrypted: false,
  });
  set(state, "runtime", "MountStatuses.runtime.talos.dev", "EPHEMERAL", {
    source: "/dev/vda6",
    target: "/var",
    filesystemType: "xfs",
    encrypted: true,
    encryptionProviders: ["luks2"],
  });
  set(state, "config", "MachineTypes.config.talos.dev", "machine-type", "controlplane");
  set(state, "cluster", "Infos.cluster.talos.dev", "current", { clusterId: "x", clusterName: "journey" });
  set(state, "hardware", "SystemInformations.hardware.talos.dev", "systeminformation", {
    uuid: "0f1e2d3c-0000-4000-8000-000000000001",
  });
  set(state, "network", "HostnameStatuses.net.talos.dev", "hostname", { hostname: "talos-abc-def", domainname: "" });
  set(state, "network", "NodeAddresses.net.talos.dev", "routed", { addresses: ["10.0.2.15/24", "172.20.0.2/24"] });
  set(state, "network", "NodeAddresses.net.talos.dev", "routed-no-k8s", {
    addresses: ["172.20.0.2/24", "10.0.2.15/24"],
  });
  const route = (id: string, dst: string, gateway: string) =>
    set(state, "network", "RouteStatuses.net.talos.dev", id, {
      family: gateway.includes(":") ? "inet6" : "inet4",
      dst,
      src: "",
      gateway,
      table: "main",
      priority: 1024,
      scope: "global",
      type: "unicast",
      flags: "",
      protocol: "dhcp",
    });
  route("inet4/10.0.2.2//1024", "", "10.0.2.2");
  route("inet6/fe80::2//1024", "", "fe80::2");
  route("inet4//10.0.2.0/24/1024", "10.0.2.0/24", "");
  set(state, "network", "NetworkStatuses.net.talos.dev", "status", {
    addressReady: true,
    connectivityReady: true,
    hostnameReady: true,
    etcFilesReady: true,
  });
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
  set(state, "runtime", "MachineStatuses.runtime.talos.dev", "machine", {
    stage: "maintenance",
    status: { ready: false, unmetConditions: [{ name: "network", reason: "waiting on: address" }] },
  });
  set(state, "network", "NodeAddresses.net.talos.dev", "routed", { addresses: ["fd00::5/64"] });
  const text = renderConsoleSummary(state, { version: "v1", apiPort: 51000 });
  assert.match(text, /^STAGE +Maintenance$/m);
  assert.match(text, /^READY +False$/m);
  assert.ok(
    text.endsWith(
      "waiting for configuration; upload it using talosctl:\n  talosctl apply-config --insecure --nodes [fd00::5]:51000 --file <config.yaml>\n\nunmet conditions:\n  network: waiting on: address\n",
    ),
    text,
  );
});

test("in maintenance after a failed install it says why, above how to apply the configuration again; not in other stages", () => {
  const state = new ResourceState();
  set(state, "runtime", "MachineStatuses.runtime.talos.dev", "machine", {
    stage: "maintenance",
    status: { ready: false, unmetConditions: [] },
  });
  set(state, "network", "NodeAddresses.net.talos.dev", "routed", { addresses: ["10.0.2.15/24"] });
  const text = renderConsoleSummary(state, {
    version: "v1",
    apiPort: 50000,
    installFailure: "the system disk has no STATE partition",
  });
  assert.ok(
    text.endsWith(
      "\nthe last install failed, so the node is still in maintenance: the system disk has no STATE partition\nfix the cause, then apply the configuration again\n\n" +
        "waiting for configuration; upload it using talosctl:\n  talosctl apply-config --insecure --nodes 10.0.2.15 --file <config.yaml>\n",
    ),
    text,
  );
  set(state, "runtime", "MachineStatuses.runtime.talos.dev", "machine", {
    stage: "installing",
    status: { ready: false, unmetConditions: [] },
  });
  assert.doesNotMatch(
    renderConsoleSummary(state, { version: "v1", apiPort: 50000, installFailure: "x" }),
    /install failed/,
  );
});

class FakeTerminals implements VirtualTerminals {
  readonly calls: string[] = [];
  readonly drawn: string[] = [];
  failDraw: Error | undefined;
  rows = 25;
  cols = 80;
  size(): { rows: number; cols: number } {
    return { rows: this.rows, cols: this.cols };
  }
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

/** A kernel log the test writes to: lines pushed are yielded in order; it ends (or fails) when told. */
function fakeKernelLog() {
  const queued: string[] = [];
  let wake: (() => void) | undefined;
  const state: { outcome: "open" | "ended" | Error } = { outcome: "open" };
  const opened: AbortSignal[] = [];
  // Each opening follows the log afresh (a failure is the last opening's).
  const reopen = () => void (state.outcome = "open");
  return {
    opened,
    write(...lines: string[]) {
      queued.push(...lines);
      wake?.();
    },
    end(err?: Error) {
      state.outcome = err ?? "ended";
      wake?.();
    },
    source: async function* (signal: AbortSignal): AsyncGenerator<string> {
      opened.push(signal);
      reopen();
      signal.addEventListener("abort", () => wake?.(), { once: true });
      for (;;) {
        while (queued.length > 0) yield queued.shift()!;
        if (signal.aborted) return;
        if (state.outcome instanceof Error) throw state.outcome;
        if (state.outcome === "ended") return;
        await new Promise<void>((r) => (wake = r));
      }
    },
  };
}
const silentKernel = () => fakeKernelLog().source;

test("the summary is drawn on tty2 at once and again when an input changes (one draw per burst), not after the stop", async () => {
  const state = runningNode();
  const terminals = new FakeTerminals();
  const ac = new AbortController();
  const running = drawSummaryUntil(
    { state, terminals, version: "v1", apiPort: 50000, kernelLog: silentKernel() },
    ac.signal,
  );
  await turn();
  assert.deepEqual(terminals.calls, ["draw 2"]);
  set(state, "network", "HostnameStatuses.net.talos.dev", "hostname", { hostname: "journey-node", domainname: "" });
  set(state, "runtime", "MachineStatuses.runtime.talos.dev", "machine", {
    stage: "rebooting",
    status: { ready: false, unmetConditions: [] },
  });
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
  await assert.rejects(
    drawSummaryUntil(
      { state: new ResourceState(), terminals, version: "v1", apiPort: 50000, kernelLog: silentKernel() },
      new AbortController().signal,
    ),
    /no \/dev\/tty2/,
  );
});

test("the service shows tty2 before it runs and tty1 after it stops, kernel messages kept on tty1", async () => {
  const terminals = new FakeTerminals();
  const def = dashboardService({
    state: new ResourceState(),
    terminals,
    version: "v1",
    apiPort: 50000,
    kernelLog: silentKernel(),
  });
  assert.equal(def.id, "dashboard");
  assert.deepEqual(def.dependsOn, ["machined"]);
  // On a node, after udevd is up, as Talos's dashboard phase follows startUdevd's wait.
  assert.deepEqual(
    dashboardService({
      state: new ResourceState(),
      terminals,
      version: "v1",
      apiPort: 50000,
      kernelLog: silentKernel(),
      afterUdevd: true,
    }).dependsOn,
    ["machined", "udevd"],
  );
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

const rule = "\u2500".repeat(80);
const summaryRows = 16; // renderConsoleSummary of runningNode(): 16 lines

test("the screen is the summary, then Talos's log pane in the rows left: a line, the newest kernel lines, long ones wrapped", () => {
  const summary = renderConsoleSummary(runningNode(), { version: "v1", apiPort: 50000 });
  const lines = new LogLines();
  for (let i = 1; i <= 6; i++) lines.push(`kern:    info: [2026-11-24T21:00:0${i}Z]: line ${i}\n`);
  // A record with its KEY=value line, and one too long for a row (wrapped at 80 columns).
  lines.push("kern:  notice: [2026-11-24T21:00:07Z]: usb 1-1: new device\n SUBSYSTEM=usb\n");
  lines.push(`kern: warning: [2026-11-24T21:00:08Z]: ${"x".repeat(70)}\tend`);
  const screen = composeScreen(summary, lines.lines(), { rows: 25, cols: 80 });
  const long = `kern: warning: [2026-11-24T21:00:08Z]: ${"x".repeat(70)} end`;
  assert.equal(
    screen,
    [
      ...summary.split("\n").slice(0, summaryRows),
      rule,
      // 25 rows - 16 - the line = 8 rows: the newest fill them from the bottom.
      "kern:    info: [2026-11-24T21:00:04Z]: line 4",
      "kern:    info: [2026-11-24T21:00:05Z]: line 5",
      "kern:    info: [2026-11-24T21:00:06Z]: line 6",
      "kern:  notice: [2026-11-24T21:00:07Z]: usb 1-1: new device",
      " SUBSYSTEM=usb",
      long.slice(0, 80),
      long.slice(80),
    ]
      .join("\n")
      .replace(/\n(kern:    info: \[2026-11-24T21:00:04Z\])/, "\nkern:    info: [2026-11-24T21:00:03Z]: line 3\n$1"),
  );
  assert.equal(screen.split("\n").length, 25, "exactly the screen's rows, no newline after the last");
  assert.doesNotMatch(screen, /\t/, "a tab (any control character) is shown as a space");
});

test('the pane reads "..." before any kernel line; a screen too small for it shows the summary alone', () => {
  const summary = renderConsoleSummary(runningNode(), { version: "v1", apiPort: 50000 });
  assert.deepEqual(renderLogPane([], 80, 9), [rule, "..."]);
  assert.equal(
    composeScreen(summary, [], { rows: 25, cols: 80 }).split("\n").slice(summaryRows).join("\n"),
    `${rule}\n...`,
  );
  assert.equal(composeScreen(summary, ["kern: x"], { rows: 17, cols: 80 }), summary.slice(0, -1));
  assert.deepEqual(renderLogPane(["a", "b", "c"], 4, 3), ["\u2500".repeat(4), "b", "c"]);
});

test("the pane keeps Talos's last 1000 lines", () => {
  const lines = new LogLines();
  for (let i = 0; i < maxLogLines + 5; i++) lines.push(`line ${i}`);
  lines.push("   ");
  assert.equal(lines.lines().length, maxLogLines);
  assert.equal(lines.lines()[0], "line 5");
  assert.equal(lines.lines().at(-1), `line ${maxLogLines + 4}`);
});

test("the dashboard draws kernel lines as they arrive, under the summary, on tty2", async () => {
  const terminals = new FakeTerminals();
  const kernel = fakeKernelLog();
  const ac = new AbortController();
  const running = drawSummaryUntil(
    { state: runningNode(), terminals, version: "v1", apiPort: 50000, kernelLog: kernel.source, logRedrawMs: 0 },
    ac.signal,
  );
  await turn();
  assert.equal(terminals.drawn.at(-1)!.split("\n").slice(summaryRows).join("\n"), `${rule}\n...`);
  const before = terminals.drawn.length;
  kernel.write(
    "kern:    info: [2026-11-24T21:00:01Z]: eth0: link up\n",
    "user:  notice: [2026-11-24T21:00:02Z]: [talos] hello\n",
  );
  while (terminals.drawn.length === before) await new Promise((r) => setTimeout(r, 1));
  assert.equal(terminals.drawn.length, before + 1, "one redraw for the burst");
  assert.equal(
    terminals.drawn.at(-1)!.split("\n").slice(summaryRows).join("\n"),
    `${rule}\nkern:    info: [2026-11-24T21:00:01Z]: eth0: link up\nuser:  notice: [2026-11-24T21:00:02Z]: [talos] hello`,
  );
  assert.ok(terminals.calls.every((c) => c === "draw 2"));
  ac.abort();
  await running;
  assert.equal(kernel.opened[0]!.aborted, true, "the kernel log is no longer followed after the stop");
});

test("a kernel log that fails shows Talos's error line and is followed again after the retry interval", async () => {
  const kernel = fakeKernelLog();
  const lines = new LogLines();
  const ac = new AbortController();
  let changes = 0;
  const following = followKernelLog(kernel.source, lines, () => void changes++, ac.signal, 1);
  kernel.write("kern: first");
  kernel.end(new Error("error reading from kmsg: EIO"));
  while (kernel.opened.length < 2) await new Promise((r) => setTimeout(r, 1));
  assert.deepEqual(lines.lines(), ["kern: first", "error reading dmesg stream: error reading from kmsg: EIO"]);
  assert.equal(changes, 2);
  kernel.write("kern: again");
  await turn();
  assert.deepEqual(lines.lines().at(-1), "kern: again");
  ac.abort();
  await following;
});
