// Boots a built Basalt image in QEMU through scripts/vm.sh for end-to-end tests:
// free host ports for the API forwards, a fresh blank disk, the console in a log
// file, and a kill of the whole process group when the test ends (or the runner exits).
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { NodeClient } from "../../agent/src/client/client.js";

export const repoRoot = path.resolve(import.meta.dirname, "..", "..", "..");
export const outDir = path.join(repoRoot, "_out", "e2e");

export type DiskFormat = "qcow2" | "raw" | "vpc";

/** Where a boot's disk lives: `_out/e2e/<disk>.qcow2`, `.raw` or `.vhd`. */
export function diskFile(disk: string, format: DiskFormat = "qcow2"): string {
  return path.join(outDir, `${disk}.${{ qcow2: "qcow2", raw: "raw", vpc: "vhd" }[format]}`);
}

/** A console line saying a sequence failed: the awaited state will not come. */
export const sequenceFailed = /sequencer: \w+ sequence: failed/;

export interface BootOptions {
  name: string;
  /** Which image (default amd64; arm64 boots in qemu-system-aarch64 under TCG). */
  arch?: "amd64" | "arm64";
  /** disk: no CD attached, the installed disk only. */
  boot: "iso" | "pxe" | "disk";
  firmware?: "uefi" | "bios";
  /** The disk image's name; boots that share it see one machine's disk across reboots. Default: `name`. */
  disk?: string;
  /** Start from a blank disk (default true); false keeps what an earlier boot left. */
  freshDisk?: boolean;
  /** The disk file's format (default qcow2; the file is `<disk>.qcow2`, `.raw` or `.vhd`). */
  diskFormat?: DiskFormat;
  /** How the disk is attached (vm.sh --disk-bus; default virtio). */
  diskBus?: "virtio" | "nvme" | "virtio-scsi" | "pvscsi" | "ide";
  /** A second NIC on an isolated network of its own (vm.sh --second-nic). */
  secondNic?: boolean;
  /** Extra kernel arguments (pxe boots). */
  append?: string;
  /** The machine's SMBIOS UUID. */
  uuid?: string;
  /** A read-only second disk (e.g. a nocloud seed). */
  seed?: string;
  /** A CD-ROM (e.g. an OpenStack config drive). */
  cdrom?: string;
  /** Let the guest reach the host (10.0.2.2) and beyond (QEMU restrict=off). */
  netOpen?: boolean;
  /** Guest memory in MiB (vm.sh's default otherwise). */
  memory?: number;
  /** vCPUs; BASALT_E2E_CPUS, or one, otherwise. */
  cpus?: number;
  /** Forward a host port to the node's Kubernetes API (6443). */
  k8sApi?: boolean;
  /** A metadata service on this host port, reached from the guest at 169.254.169.254:80, 169.254.42.42:80 and 168.63.129.16:80 (vm.sh --metadata-port). */
  metadataPort?: number;
}

export interface BootedNode {
  apiPort: number;
  /** The host port forwarded to the node's 6443 (k8sApi), else 0. */
  k8sPort: number;
  serialLog: string;
  startedAt: number;
  /** The accelerator vm.sh chose ("kvm" or "tcg"; "" before it said). */
  accel(): string;
  /** The node's console so far. */
  console(): string;
  /** A maintenance-mode client (TLS without verification, as talosctl --insecure). */
  client(): NodeClient;
  /** A client over mutual TLS with a talosconfig context's material. */
  mtlsClient(creds: { ca: string; crt: string; key: string }): NodeClient;
  /** Resolves when QEMU has exited (a guest reboot or power-off ends it: -no-reboot). */
  exited: Promise<void>;
  /** Kills QEMU; the disk stays unless `removeDisk`. */
  stop(opts?: { removeDisk?: boolean }): Promise<void>;
}

const running = new Set<ChildProcess>();
function killGroup(child: ChildProcess): void {
  if (child.pid && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}
process.on("exit", () => running.forEach(killGroup));
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => process.exit(130));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export function artifactsPresent(arch: "amd64" | "arm64" = "amd64"): boolean {
  return [`metal-${arch}.iso`, `initramfs-${arch}.xz`, `vmlinuz-${arch}`].every((f) =>
    fs.existsSync(path.join(repoRoot, "_out", f)),
  );
}

export async function bootNode(opts: BootOptions): Promise<BootedNode> {
  fs.mkdirSync(outDir, { recursive: true });
  const apiPort = await freePort();
  const trustdPort = await freePort();
  const k8sPort = opts.k8sApi ? await freePort() : 0;
  const serialLog = path.join(outDir, `${opts.name}.console.log`);
  fs.rmSync(serialLog, { force: true });
  const diskFormat = opts.diskFormat ?? "qcow2";
  const disk = diskFile(opts.disk ?? opts.name, diskFormat);
  const args = [
    "scripts/vm.sh",
    "--no-build",
    "--arch",
    opts.arch ?? "amd64",
    "--boot",
    opts.boot,
    "--firmware",
    opts.firmware ?? "uefi",
    "--api-port",
    String(apiPort),
    "--trustd-port",
    String(trustdPort),
    "--disk",
    disk,
    "--disk-format",
    diskFormat,
    "--disk-bus",
    opts.diskBus ?? "virtio",
    ...(opts.freshDisk === false ? [] : ["--fresh-disk"]),
    ...(opts.secondNic ? ["--second-nic"] : []),
    "--serial",
    serialLog,
    "--cpus",
    String(opts.cpus ?? process.env.BASALT_E2E_CPUS ?? 1),
    "--accel",
    process.env.BASALT_E2E_ACCEL ?? "auto",
    ...(opts.append ? ["--append", opts.append] : []),
    ...(opts.uuid ? ["--uuid", opts.uuid] : []),
    ...(opts.seed ? ["--seed", opts.seed] : []),
    ...(opts.cdrom ? ["--cdrom", opts.cdrom] : []),
    ...(opts.netOpen ? ["--net-open"] : []),
    ...(opts.memory ? ["--memory", String(opts.memory)] : []),
    ...(k8sPort ? ["--k8s-port", String(k8sPort)] : []),
    ...(opts.metadataPort ? ["--metadata-port", String(opts.metadataPort)] : []),
  ];
  const startedAt = Date.now();
  const child = spawn("bash", args, { cwd: repoRoot, detached: true, stdio: ["ignore", "ignore", "pipe"] });
  running.add(child);
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const clients: NodeClient[] = [];
  const track = (c: NodeClient) => {
    clients.push(c);
    return c;
  };
  return {
    apiPort,
    k8sPort,
    serialLog,
    startedAt,
    accel: () => /with (kvm|tcg)/.exec(stderr)?.[1] ?? "",
    console: () =>
      (fs.existsSync(serialLog) ? fs.readFileSync(serialLog, "utf8") : "") +
      (child.exitCode !== null ? `\n[vm.sh exited ${child.exitCode}]\n${stderr}` : ""),
    client: () => track(new NodeClient({ endpoint: `127.0.0.1:${apiPort}`, credentials: { kind: "insecure" } })),
    mtlsClient: (c) => track(new NodeClient({ endpoint: `127.0.0.1:${apiPort}`, credentials: { kind: "mtls", ...c } })),
    exited,
    stop: async (stopOpts = {}) => {
      clients.forEach((c) => c.close());
      killGroup(child);
      await Promise.race([exited, sleep(5000)]);
      running.delete(child);
      if (stopOpts.removeDisk ?? opts.freshDisk !== false) fs.rmSync(disk, { force: true });
    },
  };
}

/** Thrown by a wait's probe when what it waits for cannot come any more (e.g. a service Failed): the wait ends at once. */
export class EventWillNotCome extends Error {}

export interface WaitOptions {
  /** Console text that means the awaited event will not come (e.g. a failed sequence): fail at once. */
  failOn?: RegExp;
}

/**
 * Calls `probe` until it resolves or the deadline passes; fails early with the console when QEMU is gone
 * or when `failOn` appears in console text printed after the wait began.
 */
export async function waitFor<T>(
  node: BootedNode,
  what: string,
  probe: () => Promise<T>,
  timeoutMs: number,
  opts: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const from = node.console().length;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      return await probe();
    } catch (err) {
      last = err;
      if (err instanceof EventWillNotCome) break;
    }
    const text = node.console();
    if (text.includes("[vm.sh exited")) break;
    const failure = opts.failOn?.exec(text.slice(from));
    if (failure) {
      last = new Error(`the console says "${lineAround(text.slice(from), failure.index)}"`);
      break;
    }
    await sleep(2000);
  }
  const summary = `${what} not reached: ${last instanceof Error ? last.message : String(last)}`;
  // Also after the console: CI keeps a failure's last lines.
  throw new Error(`${summary}\n${consoleReport(node)}\n--- ${summary}`);
}

/** Waits for QEMU to exit (the guest rebooted or powered off: -no-reboot), failing with the console at the deadline. */
export async function waitExit(node: BootedNode, what: string, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutMs)));
  const outcome = await Promise.race([node.exited.then(() => "exited" as const), timedOut]);
  clearTimeout(timer);
  if (outcome === "timeout")
    throw new Error(`${what}: QEMU still running after ${timeoutMs / 1000} s\n${consoleReport(node)}`);
}

function lineAround(text: string, index: number): string {
  const start = text.lastIndexOf("\n", index) + 1;
  const end = text.indexOf("\n", index);
  return text.slice(start, end < 0 ? undefined : end).trim();
}

/**
 * CI prints only the failure, not the console file: init's own lines and every failure give the story of
 * earlier boots and machined restarts that the tail has scrolled past.
 */
export function consoleReport(node: BootedNode): string {
  const lines = node.console().split("\n");
  const notable = lines
    .filter((l) => /basalt-init:|failed|fatal|panic|Error:/.test(l))
    .slice(-40)
    .join("\n");
  // The test's own polling fills the tail with answered calls; the rest is what the node did meanwhile.
  const tail = lines
    .filter((l) => !answeredCall.test(l))
    .slice(-40)
    .join("\n");
  // CI keeps a failure's last lines: the failures come last.
  return `--- console tail, answered calls left out (${node.serialLog}) ---\n${tail}\n--- init and failures ---\n${notable}`;
}

/** machined's log line of an API call that succeeded. */
const answeredCall = /\] machined: OK \[\//;

/** The GPT names of the disk's first six partitions, as the node's kernel reports them (Read of sysfs over the API). */
export async function systemPartitionNames(c: NodeClient, disk: string): Promise<string[]> {
  const partitions = (await c.read("/proc/partitions")).toString();
  const names: string[] = [];
  for (let i = 1; i <= 6; i++) {
    assert.match(partitions, new RegExp(`${disk}${i}\\n`));
    names.push(/^PARTNAME=(.*)$/m.exec((await c.read(`/sys/class/block/${disk}${i}/uevent`)).toString())?.[1] ?? "");
  }
  return names;
}

const TEN_GIB = 10 * 1024 * 1024 * 1024;
interface Disk {
  device_name: string;
  size: number;
}
export interface ListedResource {
  resource: { metadata: { namespace: string; type: string; id: string }; spec: { yaml_spec: string } };
}

/** The names udev gave the NICs: the node's physical links (LinkStatus of type ether, no kind), sorted. */
export async function physicalLinkNames(c: NodeClient): Promise<string[]> {
  const listed = await c.collect<ListedResource>(
    c.cosi,
    "List",
    { namespace: "network", type: "LinkStatuses.net.talos.dev" },
    10_000,
  );
  const physical = listed.filter(
    (r) => /^type: ether$/m.test(r.resource.spec.yaml_spec) && /^kind: ""$/m.test(r.resource.spec.yaml_spec),
  );
  return physical.map((r) => r.resource.metadata.id).sort();
}

/** DevicesStatus `devices` as `talosctl get devicesstatuses -o yaml` shows its spec. */
export async function devicesStatusYaml(c: NodeClient): Promise<string[]> {
  const listed = await c.collect<ListedResource>(
    c.cosi,
    "List",
    { namespace: "runtime", type: "DevicesStatuses.runtime.talos.dev" },
    10_000,
  );
  return listed.map((r) => `${r.resource.metadata.id}: ${r.resource.spec.yaml_spec}`);
}

/**
 * Waits for the maintenance API and checks what every fresh boot shows through it: storage.Disks lists the
 * blank 10 GiB virtio disk /dev/vda, and COSI's AddressStatuses the DHCP lease 10.0.2.15/24 (which may land
 * a moment after the listener is up). Returns the listed addresses.
 */
export async function expectMaintenanceApi(
  node: BootedNode,
  bootTimeoutMs: number,
  diagnostic: (msg: string) => void,
): Promise<ListedResource[]> {
  const client = node.client();
  const disks = await waitFor(
    node,
    "maintenance API (storage.Disks)",
    async () => {
      const reply = await client.unary<{ messages: { disks: Disk[] }[] }>(client.storage, "Disks", {}, 10_000);
      return reply.messages.flatMap((m) => m.disks);
    },
    bootTimeoutMs,
  );
  diagnostic(`API answered ${((Date.now() - node.startedAt) / 1000).toFixed(1)} s after QEMU start`);
  const vda = disks.find((d) => d.device_name === "/dev/vda");
  assert.ok(vda, `no /dev/vda among ${JSON.stringify(disks.map((d) => d.device_name))}`);
  assert.equal(Number(vda.size), TEN_GIB);
  return waitFor(
    node,
    "a DHCP address in AddressStatuses",
    async () => {
      const listed = await client.collect<ListedResource>(
        client.cosi,
        "List",
        { namespace: "network", type: "AddressStatuses.net.talos.dev" },
        10_000,
      );
      if (!listed.some((r) => /address: 10\.0\.2\.15\/24/.test(r.resource.spec.yaml_spec))) {
        throw new Error(`addresses: ${listed.map((r) => r.resource.metadata.id).join(", ")}`);
      }
      return listed;
    },
    120_000,
  );
}

/**
 * Subtests of a journey where each step needs the one before it: once one fails, the rest are
 * skipped rather than booted for nothing.
 */
export function journeySteps(t: {
  test(name: string, opts: { skip: string | false }, fn: () => Promise<void>): Promise<unknown>;
}) {
  let failedStep: string | undefined;
  return async (name: string, fn: () => Promise<void>): Promise<void> => {
    await t.test(name, { skip: failedStep ? `after the failed step "${failedStep}"` : false }, async () => {
      try {
        await fn();
      } catch (err) {
        failedStep = name;
        throw err;
      }
    });
  };
}
