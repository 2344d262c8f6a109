import assert from "node:assert/strict";
import { test } from "node:test";
import { addLogTap } from "../../../agent/src/log.js";
import {
  announceMaintenance,
  maintenanceConsoleLines,
  reprintOnChange,
  type MaintenanceBanner,
} from "../../../agent/src/machined/maintenance-console.js";
import { generateEd25519CA } from "../../../agent/src/pki/ed25519-certificates.js";
import { nodeAddresses, waitForNodeAddress } from "../../../agent/src/machined/node-identity.js";
import { ResourceState } from "../../../agent/src/resources/state.js";

test("console lines name the addresses, the wait and the fingerprint", () => {
  const lines = maintenanceConsoleLines({ addresses: ["10.0.0.5", "fd00::5"], port: 50000, fingerprint: "abc=" });
  assert.ok(lines.includes("\t10.0.0.5"));
  assert.ok(lines.includes("\tfd00::5"));
  assert.ok(lines.some((l) => l.includes("waiting for configuration")));
  assert.ok(lines.some((l) => l.includes("--nodes 10.0.0.5 --file")));
  assert.ok(lines.some((l) => l.includes("--cert-fingerprint 'abc='")));
  const other = maintenanceConsoleLines({ addresses: ["127.0.0.1"], port: 51000, fingerprint: "x" });
  assert.ok(other.some((l) => l.includes("--nodes 127.0.0.1:51000")));
});

const setAddresses = (state: ResourceState, id: string, addresses: string[]) =>
  state.modify<{ addresses: string[] }>(
    "network",
    "NodeAddresses.net.talos.dev",
    id,
    "network.NodeAddressController",
    () => ({ addresses }),
  );

const setCert = (state: ResourceState, crt: string) =>
  state.modify<{ ca: { crt: string; key: string }; server: { crt: string; key: string } }>(
    "secrets",
    "MaintenanceServiceCertificates.secrets.talos.dev",
    "maintenance",
    "secrets.MaintenanceController",
    () => ({ ca: { crt: "", key: "" }, server: { crt, key: "" } }),
  );

test("the banner is printed again when the reachable addresses change (the DHCPv4 lease after SLAAC) or the certificate is issued again, not when unchanged, not after leaving maintenance", () => {
  const state = new ResourceState();
  setAddresses(state, "current", ["fec0::5054:ff:fe12:3456/64"]);
  setCert(state, "cert-1");
  const printed: MaintenanceBanner[] = [];
  const ac = new AbortController();
  const current = () => ({
    addresses: nodeAddresses(state),
    fingerprint: `fp-of-${state.get<{ server: { crt: string } }>("secrets", "MaintenanceServiceCertificates.secrets.talos.dev", "maintenance")!.spec.server.crt}`,
  });
  reprintOnChange(state, ac.signal, { printed: current(), current, print: (b) => printed.push(b) });
  assert.deepEqual(printed, [], "what is already on the console is not printed twice");
  setAddresses(state, "current", ["10.0.2.15/24", "fec0::5054:ff:fe12:3456/64"]);
  assert.deepEqual(printed, [{ addresses: ["10.0.2.15", "fec0::5054:ff:fe12:3456"], fingerprint: "fp-of-cert-1" }]);
  setAddresses(state, "default", ["10.0.2.15/24"]);
  assert.equal(printed.length, 1, "an event that leaves the reachable list as printed prints nothing");
  setCert(state, "cert-2");
  assert.deepEqual(
    printed[1],
    { addresses: ["10.0.2.15", "fec0::5054:ff:fe12:3456"], fingerprint: "fp-of-cert-2" },
    "a certificate issued for the new SANs has a new key: its fingerprint is shown",
  );
  ac.abort();
  setAddresses(state, "current", ["10.0.2.16/24"]);
  setCert(state, "cert-3");
  assert.equal(printed.length, 2);
});

test("a listener up before DHCP prints nothing until the first address, then the banner once with it", async (t) => {
  const state = new ResourceState();
  const lines: string[] = [];
  t.after(
    addLogTap(
      (line, component) => void (component === "maintenance" && lines.push(line.replace(/^.*maintenance: /, ""))),
    ),
  );
  const ac = new AbortController();
  t.after(() => ac.abort());
  const { certPem } = await generateEd25519CA({ commonName: "maintenance", lifetimeMs: 3_600_000 });
  setAddresses(state, "current", []);
  setCert(state, certPem);
  await announceMaintenance(state, "0.0.0.0:50000", ac.signal);
  assert.equal(lines.length, 0, "no address yet: nowhere to name");
  setAddresses(state, "current", ["10.0.2.15/24"]);
  assert.equal(lines.filter((l) => l === "entering maintenance service").length, 1);
  assert.ok(lines.includes("\t10.0.2.15"), lines.join("\n"));
  assert.ok(lines.some((l) => l.includes("talosctl apply-config --insecure --nodes 10.0.2.15 --file")));
});

test("with a DHCPv4 operator running, an IPv6-only address list waits for the IPv4 lease (bounded); without one any address will do", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const settled = (p: Promise<void>) => {
    let done = false;
    void p.then(() => (done = true));
    return async () => {
      await new Promise((r) => setImmediate(r));
      return done;
    };
  };
  const state = new ResourceState();
  const signal = new AbortController().signal;
  setAddresses(state, "current", ["fec0::5054:ff:fe12:3456/64"]);
  assert.equal(
    await settled(waitForNodeAddress(state, signal, 600_000))(),
    true,
    "no DHCP: the SLAAC address is enough",
  );
  const waiting = settled(waitForNodeAddress(state, signal, 600_000, { ipv4GraceMs: 300_000 }));
  assert.equal(await waiting(), false, "IPv6 only: still waiting for the lease");
  setAddresses(state, "current", ["10.0.2.15/24", "fec0::5054:ff:fe12:3456/64"]);
  assert.equal(await waiting(), true, "the lease arrived");
  setAddresses(state, "current", ["fec0::5054:ff:fe12:3456/64"]);
  const noLease = settled(waitForNodeAddress(state, signal, 600_000, { ipv4GraceMs: 300_000 }));
  assert.equal(await noLease(), false);
  t.mock.timers.tick(300_000);
  assert.equal(await noLease(), true, "no lease within the grace: maintenance starts with the IPv6 address");
});

test("after a failed install the banner starts with why the node is still in maintenance; without one it is unchanged", () => {
  const opts = { addresses: ["10.0.0.5"], port: 50000, fingerprint: "abc=" };
  const plain = maintenanceConsoleLines(opts);
  const failed = maintenanceConsoleLines({
    ...opts,
    installFailure: "task install (1/1): the install disk /dev/sdz was not found",
  });
  assert.deepEqual(failed, [
    "the last install failed, so the node is still in maintenance: task install (1/1): the install disk /dev/sdz was not found",
    "fix the cause, then apply the configuration again",
    ...plain,
  ]);
  assert.equal(plain[0], "entering maintenance service");
});
