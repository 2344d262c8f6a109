// Power loss during install: QEMU is killed at a chosen moment and the machine
// booted again from the ISO. Each time the node must answer: in maintenance mode
// or with its configuration over mutual TLS, never neither.
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { test } from "node:test";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { artifactsPresent, bootNode, waitFor, type BootedNode } from "./qemu.js";

const bootMs = 600_000;

async function waitForConsole(node: BootedNode, line: RegExp, timeoutMs: number): Promise<void> {
  await waitFor(
    node,
    `console line ${line}`,
    async () => {
      if (!line.test(node.console())) throw new Error("not yet");
    },
    timeoutMs,
  );
}

/** Which way the node answers once booted again: "maintenance" or "configured". */
async function answers(
  node: BootedNode,
  creds: { ca: string; crt: string; key: string },
): Promise<"maintenance" | "configured"> {
  const insecure = node.client();
  const admin = node.mtlsClient(creds);
  return waitFor(
    node,
    "an answer in maintenance mode or over mTLS",
    () =>
      Promise.any([
        admin.version().then(() => "configured" as const),
        // In maintenance, Version answers Unimplemented; Disks answers anyone.
        insecure.version().then(
          () => Promise.reject(new Error("maintenance Version must be refused")),
          () => insecure.disks().then(() => "maintenance" as const),
        ),
      ]),
    bootMs,
  );
}

const killPoints: { name: string; after: RegExp; expect: ("maintenance" | "configured")[] }[] = [
  // The partition table is written, nothing else yet: the next boot finds no usable install.
  { name: "during install, after the partition table", after: /partition table written/, expect: ["maintenance"] },
  // The configuration is on STATE: the next boot (the ISO still attached) runs with it.
  { name: "after the config is saved to STATE", after: /task saveConfig \(1\/1\): done/, expect: ["configured"] },
];

test("power loss during apply and install", {
  skip: artifactsPresent() ? false : "image not built (npm run image)",
  timeout: 60 * 60_000,
}, async (t) => {
  const generated = await generateConfigs({
    clusterName: "power",
    endpoint: "https://10.0.2.15:6443",
    installDisk: "/dev/vda",
  });
  const creds = parseTalosconfig(generated.talosconfig);
  for (const point of killPoints) {
    await t.test(point.name, async () => {
      const disk = `power-${point.name.replace(/\W+/g, "-")}`;
      const first = await bootNode({ name: `${disk}-1`, boot: "iso", disk });
      try {
        const insecure = first.client();
        await waitFor(first, "maintenance API", () => insecure.disks(), bootMs);
        await insecure.applyConfiguration(generated.controlplane);
        await waitForConsole(first, point.after, bootMs);
      } finally {
        await first.stop({ removeDisk: false });
      }
      await sleep(500);
      const second = await bootNode({ name: `${disk}-2`, boot: "iso", disk, freshDisk: false });
      try {
        const how = await answers(second, creds);
        assert.ok(point.expect.includes(how), `answered ${how}, expected ${point.expect.join(" or ")}`);
      } finally {
        await second.stop({ removeDisk: true });
      }
    });
  }
});
