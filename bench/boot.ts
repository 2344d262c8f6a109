// One boot of the built image in QEMU (--arch amd64|arm64, --boot iso|pxe, --firmware uefi|bios), measured: seconds from QEMU start to the
// maintenance API answering storage.Disks, kernel uptime (from the console's
// printk timestamps and init's own lines) along the boot (init start, machined start, its first line,
// its API socket, the first address, apid listening, the maintenance banner, API answering), and the
// agent's memory once idle (PSS sum, RSS sum beside it). Prints figures only.
import { bootNode, waitFor } from "../test/e2e/qemu.js";

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? dflt) : dflt;
};
const arch = arg("arch", "amd64") as "amd64" | "arm64";
const boot = arg("boot", "iso") as "iso" | "pxe";
// arm64 boots UEFI only.
const firmware = arch === "arm64" ? "uefi" : (arg("firmware", "uefi") as "uefi" | "bios");

function lastKernelTimestamp(text: string): number | undefined {
  const all = [...text.matchAll(/^\[\s*(\d+\.\d+)\]/gm)];
  const last = all.at(-1);
  return last ? Number(last[1]) : undefined;
}
/** Kernel uptime of the first console line matching `re` (machined's lines go to the console through init). */
function consoleFigure(text: string, re: RegExp): string {
  for (const line of text.split("\n")) {
    const m = /^\[\s*(\d+\.\d+)\]/.exec(line);
    if (m && re.test(line)) return `${Number(m[1]).toFixed(2)} s`;
  }
  return "n/a";
}
function initFigure(text: string, what: string): string {
  const m = new RegExp(`basalt-init: kernel uptime ([\\d.]+) s: ${what}`).exec(text);
  return m ? `${Number(m[1]).toFixed(2)} s` : "n/a";
}

const node = await bootNode({ name: `bench-${arch}-${boot}`, arch, boot, firmware });
try {
  const client = node.client();
  await waitFor(node, "maintenance API", () => client.unary(client.storage, "Disks", {}, 10_000), 600_000);
  const apiSeconds = (Date.now() - node.startedAt) / 1000;
  const atApi = lastKernelTimestamp(node.console());
  const rows: [string, string][] = [
    ["boot", `${arch} ${boot === "iso" ? `iso (${firmware})` : "pxe"}`],
    ["accel", node.accel()],
    ["qemu start -> API answering", `${apiSeconds.toFixed(1)} s`],
    ["kernel uptime: init started", initFigure(node.console(), "init started")],
    ["kernel uptime: switched root", initFigure(node.console(), "switched root")],
    ["kernel uptime: machined started", initFigure(node.console(), "machined started")],
    ["kernel uptime: machined's first line", consoleFigure(node.console(), /\[basalt\] machined: starting/)],
    ["kernel uptime: machined API listening (socket)", consoleFigure(node.console(), /machined API listening/)],
    [
      "kernel uptime: first address on a link (not lo)",
      consoleFigure(node.console(), /adding address .*"link":"(?!lo")/),
    ],
    ["kernel uptime: apid listening", consoleFigure(node.console(), /api listener ready/)],
    ["kernel uptime: maintenance banner", consoleFigure(node.console(), /entering maintenance service/)],
    ["kernel uptime: API answering (last console timestamp)", atApi !== undefined ? `${atApi.toFixed(2)} s` : "n/a"],
  ];
  // init prints the agent's memory 60 s after machined starts, then every 600 s. Idle in maintenance means
  // after the API answered: on a slow (loaded, TCG) boot the first report comes before apid runs, so the next is taken.
  const mem = await waitFor(
    node,
    "init's memory report after the API answered",
    async () => {
      for (const m of node
        .console()
        .matchAll(
          /kernel uptime ([\d.]+) s: agent memory PSS (\d+) KiB \(RSS sum (\d+) KiB\) in (\d+) node processes/g,
        )) {
        const at = Number(m[1]);
        if (atApi === undefined || at >= atApi) return { at, pss: m[2]!, rss: m[3]!, processes: m[4]! };
      }
      throw new Error("not yet");
    },
    720_000,
  ).catch(() => undefined);
  const mib = (kib: string) => `${(Number(kib) / 1024).toFixed(1)} MiB`;
  rows.push(["agent memory at idle: kernel uptime", mem ? `${mem.at.toFixed(2)} s` : "n/a"]);
  rows.push(["agent memory at idle: PSS sum", mem ? `${mib(mem.pss)} in ${mem.processes} processes` : "n/a"]);
  rows.push(["agent memory at idle: RSS sum", mem ? `${mib(mem.rss)} (shared pages once per process)` : "n/a"]);
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
} finally {
  await node.stop();
}
