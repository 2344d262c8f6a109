// Our ISO against the bare Node-listener baseline ISO (../shared/baseline), booted
// alternately in one run with the same QEMU arguments: seconds from QEMU start until
// the baseline answers on TCP 50000 and until our node answers storage.Disks in
// maintenance mode. Absolute times drift with the host's load; the ratio is the figure.
// Each boot's serial console is read as it arrives, so every stage (kernel start, init,
// the agent's exec, its first line, its listener) is placed on the same QEMU-start clock
// for both; the consoles, each line prefixed with its arrival time, go to --consoles.
// --boot pxe boots each one's kernel and initramfs directly (QEMU -kernel/-initrd, as a PXE boot hands them over).
// usage: node dist/bench/boot-vs-baseline.js [--rounds N] [--boot iso|pxe] [--cpus N] [--baseline DIR] [--out DIR[,DIR...]] [--consoles DIR]
//   --cpus: vCPUs of every boot (default 2, as scripts/vm.sh boots a node);
//   --baseline: the output directory of ../shared/baseline/build.sh (default _out/baseline);
//   --out: where our artifacts are (default _out); several, comma-separated (e.g. a copy of an earlier build
//          and this one), are booted in turn after the baseline in every round, so a lever is measured in the same minutes;
//   --consoles: where the consoles are written (default _out/bench-consoles)
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { NodeClient } from "../agent/src/client/client.js";
import { freePort, repoRoot } from "../test/e2e/qemu.js";

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? dflt) : dflt;
};
const rounds = Number(arg("rounds", "2"));
const boot = arg("boot", "iso");
if (boot !== "iso" && boot !== "pxe") throw new Error(`--boot must be iso or pxe, got ${boot}`);
const cpus = Number(arg("cpus", "2"));
if (!Number.isInteger(cpus) || cpus < 1) throw new Error(`--cpus must be a positive integer, got ${arg("cpus", "")}`);
const baselineDir = path.resolve(arg("baseline", path.join(repoRoot, "_out", "baseline")));
const ourDirs = arg("out", path.join(repoRoot, "_out"))
  .split(",")
  .map((d) => path.resolve(d));
const consoleDir = path.resolve(arg("consoles", path.join(repoRoot, "_out", "bench-consoles")));

/** What QEMU boots: an ISO, or a kernel, initramfs and command line. */
type Artifacts = { iso: string } | { kernel: string; initrd: string; append: string };
const baselineBoot: Artifacts =
  boot === "iso"
    ? { iso: path.join(baselineDir, "baseline.iso") }
    : {
        kernel: path.join(baselineDir, "vmlinuz"),
        initrd: path.join(baselineDir, "initramfs.img"),
        append: "console=ttyS0 loglevel=4",
      };
const ourBoot = (dir: string): Artifacts =>
  boot === "iso"
    ? { iso: path.join(dir, "metal-amd64.iso") }
    : {
        kernel: path.join(dir, "vmlinuz-amd64"),
        initrd: path.join(dir, "initramfs-amd64.xz"),
        append: fs.readFileSync(path.join(dir, "cmdline-amd64.txt"), "utf8").trim(),
      };
const files = (a: Artifacts) => ("iso" in a ? [a.iso] : [a.kernel, a.initrd]);
const timeoutMs = 600_000;

type Probe = (port: number) => Promise<void>;

/** The baseline listener writes one line and closes. */
const baselineAnswers: Probe = (port) =>
  new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1");
    let text = "";
    s.on("data", (d) => (text += d.toString()));
    s.on("end", () => (text.startsWith("baseline") ? resolve() : reject(new Error("no answer"))));
    s.on("error", reject);
    s.setTimeout(5000, () => s.destroy(new Error("timeout")));
  });

const basaltAnswers: Probe = async (port) => {
  const c = new NodeClient({ endpoint: `127.0.0.1:${port}`, credentials: { kind: "insecure" } });
  try {
    await c.unary(c.storage, "Disks", {}, 5000);
  } finally {
    c.close();
  }
};

/** A console line and the seconds after QEMU start at which it arrived. */
interface ConsoleLine {
  at: number;
  text: string;
}

/** A stage of a boot: the first console line matching `line` marks it, at the kernel uptime the line carries. */
interface Stage {
  name: string;
  line: RegExp;
}
const stageNames = [
  "kernel start",
  "init started",
  "root switched",
  "agent exec'd",
  "agent's first line",
  "API listening",
] as const;
const baselineStages: Stage[] = [
  { name: "init started", line: /^\[init [\d.]+\] start$/ },
  { name: "root switched", line: /^\[init [\d.]+\] switched root/ },
  { name: "agent exec'd", line: /^\[init [\d.]+\] exec node/ },
  { name: "agent's first line", line: /BASELINE_LISTENING/ },
  { name: "API listening", line: /BASELINE_LISTENING/ },
];
const basaltStages: Stage[] = [
  { name: "init started", line: /basalt-init: kernel uptime [\d.]+ s: init started/ },
  { name: "root switched", line: /basalt-init: kernel uptime [\d.]+ s: switched root/ },
  { name: "agent exec'd", line: /basalt-init: kernel uptime [\d.]+ s: machined started/ },
  { name: "agent's first line", line: /\[basalt\] machined: starting/ },
  { name: "API listening", line: /api listener ready/ },
];

/** The kernel uptime a console line carries: printk's stamp, the baseline init's, or the listener's. */
function uptimeOf(text: string): number | undefined {
  const m =
    /^\[\s*(\d+\.\d+)\]/.exec(text) ?? /^\[init (\d+\.\d+)\]/.exec(text) ?? /kernel_uptime=([\d.]+)s/.exec(text);
  return m ? Number(m[1]) : undefined;
}

/**
 * Seconds after QEMU start of each stage. The kernel started at the earliest (arrival - uptime) of any
 * stamped line: a line printed as it is logged arrives at once, while the kernel's first lines wait for
 * the serial console to register, so the minimum is the live ones'.
 */
function timeline(lines: ConsoleLine[], stages: Stage[]): Map<string, number> {
  const out = new Map<string, number>();
  let kernelStart = Infinity;
  for (const l of lines) {
    const up = uptimeOf(l.text);
    if (up !== undefined) kernelStart = Math.min(kernelStart, l.at - up);
  }
  if (kernelStart === Infinity) return out;
  out.set("kernel start", kernelStart);
  for (const stage of stages) {
    const l = lines.find((x) => stage.line.test(x.text));
    const up = l && uptimeOf(l.text);
    if (up !== undefined) out.set(stage.name, kernelStart + up);
  }
  return out;
}

/** The guest kernel panicked: under TCG on a starved host its IO-APIC timer check can fail before anything of ours runs. */
class KernelPanicError extends Error {}

/** One boot, booted once more when its kernel panicked (said on the output, so a round's figures stay whole). */
async function bootCounted(what: Artifacts, probe: Probe, stages: Stage[], consoleFile: string): Promise<Boot> {
  try {
    return await bootOnce(what, probe, stages, consoleFile);
  } catch (err) {
    if (!(err instanceof KernelPanicError)) throw err;
    console.log(`${files(what).join(" ")}: kernel panic (${err.message}); booting it again`);
    return await bootOnce(what, probe, stages, consoleFile.replace(/\.log$/, "-again.log"));
  }
}

interface Boot {
  seconds: number;
  stages: Map<string, number>;
}

/** Boots `what` under UEFI/TCG as scripts/vm.sh does; the seconds until `probe` succeeds and the console's stages. */
async function bootOnce(what: Artifacts, probe: Probe, stages: Stage[], consoleFile: string): Promise<Boot> {
  const port = await freePort();
  const vars = path.join(repoRoot, "_out", "cache", `OVMF_VARS.bench.${process.pid}.fd`);
  fs.copyFileSync("/usr/share/OVMF/OVMF_VARS_4M.fd", vars);
  const args = [
    "-machine",
    "q35",
    "-accel",
    "tcg",
    "-m",
    "2048",
    "-smp",
    String(cpus),
    "-no-reboot",
    "-display",
    "none",
    "-serial",
    "stdio",
    "-monitor",
    "none",
    "-netdev",
    `user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:${port}-:50000`,
    "-device",
    "virtio-net-pci,netdev=net0",
    "-device",
    "virtio-rng-pci",
    "-drive",
    "if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd",
    "-drive",
    `if=pflash,format=raw,unit=1,file=${vars}`,
    ...("iso" in what
      ? ["-drive", `file=${what.iso},if=none,id=cd0,media=cdrom,readonly=on`, "-device", "ide-cd,drive=cd0,bootindex=1"]
      : ["-kernel", what.kernel, "-initrd", what.initrd, "-append", what.append]),
  ];
  const started = Date.now();
  const qemu = spawn("qemu-system-x86_64", args, { stdio: ["ignore", "pipe", "ignore"] });
  const lines: ConsoleLine[] = [];
  let partial = "";
  qemu.stdout.on("data", (chunk: Buffer) => {
    const at = (Date.now() - started) / 1000;
    const parts = (partial + chunk.toString("latin1")).split(/\r?\n/);
    partial = parts.pop()!;
    for (const text of parts) lines.push({ at, text: text.replace(/\r/g, "") });
  });
  // A probe sent before the guest has its address hangs in QEMU's user network until its own timeout, so a new
  // one starts every half second beside those still out: the first to succeed marks the moment, not the end of a stuck one.
  let answeredAt: number | undefined;
  let wake = () => {};
  const answered = new Promise<void>((resolve) => (wake = resolve));
  const inFlight = new Set<Promise<void>>();
  try {
    while (Date.now() - started < timeoutMs) {
      if (qemu.exitCode !== null) throw new Error(`QEMU exited (${qemu.exitCode}) booting ${files(what).join(" ")}`);
      const panic = lines.find((l) => l.text.includes("Kernel panic"));
      if (panic) throw new KernelPanicError(panic.text.trim());
      if (answeredAt !== undefined) return { seconds: (answeredAt - started) / 1000, stages: timeline(lines, stages) };
      const attempt: Promise<void> = probe(port).then(
        () => {
          answeredAt ??= Date.now();
          wake();
        },
        () => {},
      );
      inFlight.add(attempt);
      void attempt.finally(() => inFlight.delete(attempt));
      await Promise.race([sleep(500), answered]);
    }
    throw new Error(`${files(what).join(" ")} did not answer within ${timeoutMs / 1000} s`);
  } finally {
    qemu.kill("SIGKILL");
    await Promise.allSettled([...inFlight]);
    fs.rmSync(vars, { force: true });
    fs.mkdirSync(consoleDir, { recursive: true });
    fs.writeFileSync(consoleFile, lines.map((l) => `${l.at.toFixed(2).padStart(7)} ${l.text}`).join("\n") + "\n");
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const medianOf = (boots: Boot[], stage: string) => {
  const xs = boots.map((b) => b.stages.get(stage)).filter((x): x is number => x !== undefined);
  return xs.length === boots.length ? median(xs) : undefined;
};

const ours = ourDirs.map((dir) => ({ dir, boot: ourBoot(dir), boots: [] as Boot[] }));
for (const file of [...files(baselineBoot), ...ours.flatMap((o) => files(o.boot))]) {
  if (!fs.existsSync(file)) {
    console.log(`missing ${file} (baseline: bash ../shared/baseline/build.sh _out/baseline; ours: npm run image)`);
    process.exit(1);
  }
}
const baseline: Boot[] = [];
for (let i = 0; i < rounds; i++) {
  baseline.push(
    await bootCounted(
      baselineBoot,
      baselineAnswers,
      baselineStages,
      path.join(consoleDir, `baseline-${boot}-${i + 1}.log`),
    ),
  );
  const line = [`round ${i + 1}: baseline ${baseline.at(-1)!.seconds.toFixed(1)} s`];
  for (const [n, o] of ours.entries()) {
    o.boots.push(
      await bootCounted(
        o.boot,
        basaltAnswers,
        basaltStages,
        path.join(consoleDir, `basalt${n || ""}-${boot}-${i + 1}.log`),
      ),
    );
    line.push(`basalt${ours.length > 1 ? ` (${o.dir})` : ""} ${o.boots.at(-1)!.seconds.toFixed(1)} s`);
  }
  console.log(line.join(", "));
}
const fmt = (x: number | undefined) => (x === undefined ? "n/a" : x.toFixed(1));
const seconds = (boots: Boot[]) => median(boots.map((x) => x.seconds));
for (const o of ours) {
  console.log(
    `${ours.length > 1 ? `${o.dir}: ` : ""}stage (s after QEMU start, median of ${rounds})   baseline  basalt  difference`,
  );
  for (const stage of [...stageNames, "API answering"]) {
    const b = stage === "API answering" ? seconds(baseline) : medianOf(baseline, stage);
    const v = stage === "API answering" ? seconds(o.boots) : medianOf(o.boots, stage);
    console.log(
      `${stage.padEnd(40)} ${fmt(b).padStart(8)} ${fmt(v).padStart(7)} ${(b === undefined || v === undefined ? "n/a" : (v - b).toFixed(1)).padStart(11)}`,
    );
  }
  console.log(
    `qemu start -> answering (UEFI ${boot === "iso" ? "ISO" : "PXE (direct kernel boot)"}, TCG, ${cpus} vCPU), median of ${rounds}: baseline ${seconds(baseline).toFixed(1)} s, basalt${ours.length > 1 ? ` (${o.dir})` : ""} ${seconds(o.boots).toFixed(1)} s, ratio ${(seconds(o.boots) / seconds(baseline)).toFixed(2)}`,
  );
}
