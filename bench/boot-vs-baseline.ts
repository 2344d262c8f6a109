// Our ISO against the bare Node-listener baseline ISO (../shared/baseline), booted
// alternately in one run with the same QEMU arguments: seconds from QEMU start until
// the baseline answers on TCP 50000 and until our node answers storage.Disks in
// maintenance mode. Absolute times drift with the host's load; the ratio is the figure.
// --boot pxe boots each one's kernel and initramfs directly (QEMU -kernel/-initrd, as a PXE boot hands them over).
// usage: node dist/bench/boot-vs-baseline.js [--rounds N] [--boot iso|pxe] [--baseline DIR] [--out DIR]
//   --baseline: the output directory of ../shared/baseline/build.sh (default _out/baseline);
//   --out: where our artifacts are (default _out; e.g. a copy of an earlier build, to compare before and after)
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
const baselineDir = path.resolve(arg("baseline", path.join(repoRoot, "_out", "baseline")));
const ourDir = path.resolve(arg("out", path.join(repoRoot, "_out")));

/** What QEMU boots: an ISO, or a kernel, initramfs and command line. */
type Artifacts = { iso: string } | { kernel: string; initrd: string; append: string };
const baselineBoot: Artifacts =
  boot === "iso"
    ? { iso: path.join(baselineDir, "baseline.iso") }
    : { kernel: path.join(baselineDir, "vmlinuz"), initrd: path.join(baselineDir, "initramfs.img"), append: "console=ttyS0 loglevel=4" };
const ourBoot: Artifacts =
  boot === "iso"
    ? { iso: path.join(ourDir, "metal-amd64.iso") }
    : { kernel: path.join(ourDir, "vmlinuz-amd64"), initrd: path.join(ourDir, "initramfs-amd64.xz"), append: fs.readFileSync(path.join(ourDir, "cmdline-amd64.txt"), "utf8").trim() };
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

/** Boots `what` under UEFI/TCG as scripts/vm.sh does and returns the seconds until `probe` succeeds. */
async function bootSeconds(what: Artifacts, probe: Probe): Promise<number> {
  const port = await freePort();
  const vars = path.join(repoRoot, "_out", "cache", `OVMF_VARS.bench.${process.pid}.fd`);
  fs.copyFileSync("/usr/share/OVMF/OVMF_VARS_4M.fd", vars);
  const args = [
    "-machine", "q35", "-accel", "tcg", "-m", "2048", "-smp", "1", "-no-reboot", "-display", "none", "-serial", "null", "-monitor", "none",
    "-netdev", `user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:${port}-:50000`, "-device", "virtio-net-pci,netdev=net0",
    "-device", "virtio-rng-pci",
    "-drive", "if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd",
    "-drive", `if=pflash,format=raw,unit=1,file=${vars}`,
    ...("iso" in what
      ? ["-drive", `file=${what.iso},if=none,id=cd0,media=cdrom,readonly=on`, "-device", "ide-cd,drive=cd0,bootindex=1"]
      : ["-kernel", what.kernel, "-initrd", what.initrd, "-append", what.append]),
  ];
  const started = Date.now();
  const qemu = spawn("qemu-system-x86_64", args, { stdio: "ignore" });
  try {
    while (Date.now() - started < timeoutMs) {
      if (qemu.exitCode !== null) throw new Error(`QEMU exited (${qemu.exitCode}) booting ${files(what).join(" ")}`);
      try {
        await probe(port);
        return (Date.now() - started) / 1000;
      } catch {
        await sleep(500);
      }
    }
    throw new Error(`${files(what).join(" ")} did not answer within ${timeoutMs / 1000} s`);
  } finally {
    qemu.kill("SIGKILL");
    fs.rmSync(vars, { force: true });
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

for (const file of [...files(baselineBoot), ...files(ourBoot)]) {
  if (!fs.existsSync(file)) {
    console.log(`missing ${file} (baseline: bash ../shared/baseline/build.sh _out/baseline; ours: npm run image)`);
    process.exit(1);
  }
}
const baseline: number[] = [];
const basalt: number[] = [];
for (let i = 0; i < rounds; i++) {
  baseline.push(await bootSeconds(baselineBoot, baselineAnswers));
  basalt.push(await bootSeconds(ourBoot, basaltAnswers));
  console.log(`round ${i + 1}: baseline ${baseline.at(-1)!.toFixed(1)} s, basalt ${basalt.at(-1)!.toFixed(1)} s`);
}
console.log(`qemu start -> answering (UEFI ${boot === "iso" ? "ISO" : "PXE (direct kernel boot)"}, TCG, 1 vCPU), median of ${rounds}: baseline ${median(baseline).toFixed(1)} s, basalt ${median(basalt).toFixed(1)} s, ratio ${(median(basalt) / median(baseline)).toFixed(2)}`);
