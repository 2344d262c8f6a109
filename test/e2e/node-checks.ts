// Checks of an installed node's services and cgroups shared by the amd64 and arm64 journeys, over mutual TLS.
import assert from "node:assert/strict";
import type { NodeClient } from "../../agent/src/client/client.js";
import { EventWillNotCome, waitFor, type BootedNode } from "./qemu.js";

export type Service = {
  id: string;
  state: string;
  events: { events: { msg: string }[] };
  health: { healthy: boolean; last_message: string };
};
type Services = { messages: { services: Service[] }[] };

/** One service as ServiceList lists it, or undefined when it is not listed. */
export async function serviceInfo(c: NodeClient, id: string): Promise<Service | undefined> {
  return ((await c.serviceList()) as Services).messages[0]!.services.find((s) => s.id === id);
}

/** A service as a failed wait words it: its state, its last event and its health's last message. */
function described(s: Service | undefined): string {
  if (!s) return "not listed";
  return `${s.state} (${s.events.events.at(-1)?.msg ?? "no event"}; health: ${s.health.last_message || s.health.healthy})`;
}

/** Waits until each of `ids` is Running and healthy in ServiceList; a Failed one (it will not start again) ends the wait. */
export async function expectServicesHealthy(
  node: BootedNode,
  c: NodeClient,
  ids: string[],
  timeoutMs: number,
): Promise<void> {
  await waitFor(
    node,
    `${ids.join(", ")} Running and healthy`,
    async () => {
      const byId = new Map(((await c.serviceList()) as Services).messages[0]!.services.map((s) => [s.id, s]));
      for (const id of ids) {
        const s = byId.get(id);
        if (s?.state === "Failed") throw new EventWillNotCome(`${id}: ${described(s)}`);
        assert.ok(s?.state === "Running" && s.health.healthy, `${id}: ${described(s)}`);
      }
    },
    timeoutMs,
  );
}

/** The names directly under `root` on the node. */
export async function namesUnder(c: NodeClient, root: string): Promise<string[]> {
  return (await c.collect<{ name: string }>(c.machine, "List", { root, recurse: false })).map((f) =>
    f.name.slice(root.length + 1),
  );
}

/** The /proc/<pid>/cgroup of the first process whose command line matches, or "" when none does. */
export async function cgroupOf(c: NodeClient, match: (argv: string[]) => boolean): Promise<string> {
  for (const p of (await namesUnder(c, "/proc")).filter((n) => /^\d+$/.test(n))) {
    const argv = (await c.read(`/proc/${p}/cmdline`).catch(() => Buffer.alloc(0))).toString().split("\0");
    if (match(argv)) return (await c.read(`/proc/${p}/cgroup`)).toString();
  }
  return "";
}

/** Talos's top-level groups exist; machined, apid, udevd and the system containerd sit in theirs. */
export async function expectTalosCgroups(c: NodeClient): Promise<void> {
  const groups = await namesUnder(c, "/sys/fs/cgroup");
  for (const g of ["init", "system", "podruntime", "kubepods"]) assert.ok(groups.includes(g), `/sys/fs/cgroup/${g}`);
  assert.equal(await cgroupOf(c, (a) => a.includes("machined")), "0::/init\n");
  assert.equal(await cgroupOf(c, (a) => a.includes("apid")), "0::/system/apid\n");
  assert.equal(await cgroupOf(c, (a) => a[0] === "systemd-udevd"), "0::/system/udevd\n");
  // The system containerd by its config (the CRI containerd is the same program, in /podruntime/runtime).
  assert.equal(
    await cgroupOf(c, (a) => a[0] === "/usr/bin/containerd" && a.includes("/system/etc/containerd/config.toml")),
    "0::/system/runtime\n",
  );
}
