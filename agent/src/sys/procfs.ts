// Parsers for the /proc files the observation RPCs report. Each takes the file's text
// and returns the values as the kernel wrote them (units untouched unless noted), in
// the field names of the machine.proto messages they fill.

import { ipv6Text } from "./ip-text.js";

/** Clock ticks per second (USER_HZ) the kernel reports /proc/stat and /proc/<pid>/stat times in. */
export const userHz = 100;

const toUint = (s: string | undefined): number => {
  const n = Number(s);
  return Number.isFinite(n) && n >= 0 ? n : 0;
};

// /proc/meminfo keys → machine.MemInfo fields; values stay in kB (HugePages_* are counts).
const meminfoKeys: Record<string, string> = {
  MemTotal: "memtotal",
  MemFree: "memfree",
  MemAvailable: "memavailable",
  Buffers: "buffers",
  Cached: "cached",
  SwapCached: "swapcached",
  Active: "active",
  Inactive: "inactive",
  "Active(anon)": "activeanon",
  "Inactive(anon)": "inactiveanon",
  "Active(file)": "activefile",
  "Inactive(file)": "inactivefile",
  Unevictable: "unevictable",
  Mlocked: "mlocked",
  SwapTotal: "swaptotal",
  SwapFree: "swapfree",
  Dirty: "dirty",
  Writeback: "writeback",
  AnonPages: "anonpages",
  Mapped: "mapped",
  Shmem: "shmem",
  Slab: "slab",
  SReclaimable: "sreclaimable",
  SUnreclaim: "sunreclaim",
  KernelStack: "kernelstack",
  PageTables: "pagetables",
  NFS_Unstable: "nfsunstable",
  Bounce: "bounce",
  WritebackTmp: "writebacktmp",
  CommitLimit: "commitlimit",
  Committed_AS: "committedas",
  VmallocTotal: "vmalloctotal",
  VmallocUsed: "vmallocused",
  VmallocChunk: "vmallocchunk",
  HardwareCorrupted: "hardwarecorrupted",
  AnonHugePages: "anonhugepages",
  ShmemHugePages: "shmemhugepages",
  ShmemPmdMapped: "shmempmdmapped",
  CmaTotal: "cmatotal",
  CmaFree: "cmafree",
  HugePages_Total: "hugepagestotal",
  HugePages_Free: "hugepagesfree",
  HugePages_Rsvd: "hugepagesrsvd",
  HugePages_Surp: "hugepagessurp",
  Hugepagesize: "hugepagesize",
  DirectMap4k: "directmap4k",
  DirectMap2M: "directmap2m",
  DirectMap1G: "directmap1g",
};

/** machine.MemInfo from /proc/meminfo: every field the proto has, 0 where the kernel does not report it. */
export function parseMeminfo(text: string): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(Object.values(meminfoKeys).map((f) => [f, 0]));
  for (const line of text.split("\n")) {
    const m = /^([^:]+):\s+(\d+)/.exec(line);
    const field = m ? meminfoKeys[m[1]!] : undefined;
    if (field) out[field] = Number(m![2]);
  }
  return out;
}

export interface CpuInfo {
  processor: number;
  vendor_id: string;
  cpu_family: string;
  model: string;
  model_name: string;
  stepping: string;
  microcode: string;
  cpu_mhz: number;
  cache_size: string;
  physical_id: string;
  siblings: number;
  core_id: string;
  cpu_cores: number;
  apic_id: string;
  initial_apic_id: string;
  fpu: string;
  fpu_exception: string;
  cpu_id_level: number;
  wp: string;
  flags: string[];
  bugs: string[];
  bogo_mips: number;
  cl_flush_size: number;
  cache_alignment: number;
  address_sizes: string;
  power_management: string;
}

function emptyCpu(processor: number): CpuInfo {
  return {
    processor,
    vendor_id: "",
    cpu_family: "",
    model: "",
    model_name: "",
    stepping: "",
    microcode: "",
    cpu_mhz: 0,
    cache_size: "",
    physical_id: "",
    siblings: 0,
    core_id: "",
    cpu_cores: 0,
    apic_id: "",
    initial_apic_id: "",
    fpu: "",
    fpu_exception: "",
    cpu_id_level: 0,
    wp: "",
    flags: [],
    bugs: [],
    bogo_mips: 0,
    cl_flush_size: 0,
    cache_alignment: 0,
    address_sizes: "",
    power_management: "",
  };
}

const words = (v: string) => v.split(/\s+/).filter(Boolean);

// x86 keys, and arm64's ("CPU implementer", "Features", "BogoMIPS") for the same fields.
const cpuSetters: Record<string, (c: CpuInfo, v: string) => void> = {
  vendor_id: (c, v) => (c.vendor_id = v),
  "CPU implementer": (c, v) => (c.vendor_id = v),
  "cpu family": (c, v) => (c.cpu_family = v),
  "CPU architecture": (c, v) => (c.cpu_family = v),
  model: (c, v) => (c.model = v),
  "CPU part": (c, v) => (c.model = v),
  "model name": (c, v) => (c.model_name = v),
  stepping: (c, v) => (c.stepping = v),
  "CPU revision": (c, v) => (c.stepping = v),
  microcode: (c, v) => (c.microcode = v),
  "cpu MHz": (c, v) => (c.cpu_mhz = Number(v) || 0),
  "cache size": (c, v) => (c.cache_size = v),
  "physical id": (c, v) => (c.physical_id = v),
  siblings: (c, v) => (c.siblings = toUint(v)),
  "core id": (c, v) => (c.core_id = v),
  "cpu cores": (c, v) => (c.cpu_cores = toUint(v)),
  apicid: (c, v) => (c.apic_id = v),
  "initial apicid": (c, v) => (c.initial_apic_id = v),
  fpu: (c, v) => (c.fpu = v),
  fpu_exception: (c, v) => (c.fpu_exception = v),
  "cpuid level": (c, v) => (c.cpu_id_level = toUint(v)),
  wp: (c, v) => (c.wp = v),
  flags: (c, v) => (c.flags = words(v)),
  Features: (c, v) => (c.flags = words(v)),
  bugs: (c, v) => (c.bugs = words(v)),
  bogomips: (c, v) => (c.bogo_mips = Number(v) || 0),
  BogoMIPS: (c, v) => (c.bogo_mips = Number(v) || 0),
  "clflush size": (c, v) => (c.cl_flush_size = toUint(v)),
  cache_alignment: (c, v) => (c.cache_alignment = toUint(v)),
  "address sizes": (c, v) => (c.address_sizes = v),
  "power management": (c, v) => (c.power_management = v),
};

/** One entry per "processor" block of /proc/cpuinfo. */
export function parseCpuinfo(text: string): CpuInfo[] {
  const cpus: CpuInfo[] = [];
  let cur: CpuInfo | undefined;
  for (const line of text.split("\n")) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (key === "processor") {
      cur = emptyCpu(toUint(value));
      cpus.push(cur);
      continue;
    }
    if (cur) cpuSetters[key]?.(cur, value);
  }
  return cpus;
}

export function parseLoadavg(text: string): { load1: number; load5: number; load15: number } {
  const [a, b, c] = text.trim().split(/\s+/).map(Number);
  return { load1: a ?? 0, load5: b ?? 0, load15: c ?? 0 };
}

export interface CpuStat {
  user: number;
  nice: number;
  system: number;
  idle: number;
  iowait: number;
  irq: number;
  soft_irq: number;
  steal: number;
  guest: number;
  guest_nice: number;
}

const softIrqNames = [
  "hi",
  "timer",
  "net_tx",
  "net_rx",
  "block",
  "block_io_poll",
  "tasklet",
  "sched",
  "hrtimer",
  "rcu",
] as const;
export type SoftIrqStat = Record<(typeof softIrqNames)[number], number>;

export interface SystemStat {
  boot_time: number;
  cpu_total: CpuStat;
  cpu: CpuStat[];
  irq_total: number;
  irq: number[];
  context_switches: number;
  process_created: number;
  process_running: number;
  process_blocked: number;
  soft_irq_total: number;
  soft_irq: SoftIrqStat;
}

/** CPU times in seconds (ticks / USER_HZ), as Talos reports them. */
function cpuStat(fields: string[]): CpuStat {
  const [user, nice, system, idle, iowait, irq, softIrq, steal, guest, guestNice] = fields.map(
    (f) => toUint(f) / userHz,
  );
  return {
    user: user ?? 0,
    nice: nice ?? 0,
    system: system ?? 0,
    idle: idle ?? 0,
    iowait: iowait ?? 0,
    irq: irq ?? 0,
    soft_irq: softIrq ?? 0,
    steal: steal ?? 0,
    guest: guest ?? 0,
    guest_nice: guestNice ?? 0,
  };
}

/** machine.SystemStat from /proc/stat; `cpu` is indexed by CPU number. */
export function parseStat(text: string): SystemStat {
  const zeroIrq = Object.fromEntries(softIrqNames.map((n) => [n, 0])) as SoftIrqStat;
  const out: SystemStat = {
    boot_time: 0,
    cpu_total: cpuStat([]),
    cpu: [],
    irq_total: 0,
    irq: [],
    context_switches: 0,
    process_created: 0,
    process_running: 0,
    process_blocked: 0,
    soft_irq_total: 0,
    soft_irq: zeroIrq,
  };
  for (const line of text.split("\n")) {
    const [key, ...f] = line.trim().split(/\s+/);
    if (!key) continue;
    if (key === "cpu") out.cpu_total = cpuStat(f);
    else if (/^cpu\d+$/.test(key)) out.cpu[Number(key.slice(3))] = cpuStat(f);
    else if (key === "intr") {
      out.irq_total = toUint(f[0]);
      out.irq = f.slice(1).map(toUint);
    } else if (key === "ctxt") out.context_switches = toUint(f[0]);
    else if (key === "btime") out.boot_time = toUint(f[0]);
    else if (key === "processes") out.process_created = toUint(f[0]);
    else if (key === "procs_running") out.process_running = toUint(f[0]);
    else if (key === "procs_blocked") out.process_blocked = toUint(f[0]);
    else if (key === "softirq") {
      out.soft_irq_total = toUint(f[0]);
      softIrqNames.forEach((n, i) => (out.soft_irq[n] = toUint(f[i + 1])));
    }
  }
  // A CPU missing from the file (offline) still has its index, with zero times.
  for (let i = 0; i < out.cpu.length; i++) out.cpu[i] ??= cpuStat([]);
  return out;
}

const netDevFields = [
  "rx_bytes",
  "rx_packets",
  "rx_errors",
  "rx_dropped",
  "rx_fifo",
  "rx_frame",
  "rx_compressed",
  "rx_multicast",
  "tx_bytes",
  "tx_packets",
  "tx_errors",
  "tx_dropped",
  "tx_fifo",
  "tx_collisions",
  "tx_carrier",
  "tx_compressed",
] as const;
export type NetDev = { name: string } & Record<(typeof netDevFields)[number], number>;

/** The devices of /proc/net/dev in file order, and their sum named by the sorted device names joined with ", ". */
export function parseNetDev(text: string): { devices: NetDev[]; total: NetDev } {
  const devices: NetDev[] = [];
  for (const line of text.split("\n").slice(2)) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const values = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/);
    const dev = { name: line.slice(0, colon).trim() } as NetDev;
    netDevFields.forEach((f, i) => (dev[f] = toUint(values[i])));
    devices.push(dev);
  }
  const total = {
    name: devices
      .map((d) => d.name)
      .sort()
      .join(", "),
  } as NetDev;
  for (const f of netDevFields) total[f] = devices.reduce((sum, d) => sum + d[f], 0);
  return { devices, total };
}

const diskStatFields = [
  "read_completed",
  "read_merged",
  "read_sectors",
  "read_time_ms",
  "write_completed",
  "write_merged",
  "write_sectors",
  "write_time_ms",
  "io_in_progress",
  "io_time_ms",
  "io_time_weighted_ms",
  "discard_completed",
  "discard_merged",
  "discard_sectors",
  "discard_time_ms",
] as const;
export type DiskStat = { name: string } & Record<(typeof diskStatFields)[number], number>;

/** /proc/diskstats lines with discard fields (18 or more columns; older kernels' lines are skipped, as Talos skips them) and their sum. */
export function parseDiskstats(text: string): { devices: DiskStat[]; total: DiskStat } {
  const devices: DiskStat[] = [];
  for (const line of text.split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f.length < 18) continue;
    const dev = { name: f[2]! } as DiskStat;
    diskStatFields.forEach((k, i) => (dev[k] = toUint(f[3 + i])));
    devices.push(dev);
  }
  const total = { name: "" } as DiskStat;
  for (const k of diskStatFields) total[k] = devices.reduce((sum, d) => sum + d[k], 0);
  return { devices, total };
}

export interface PidStat {
  state: string;
  ppid: number;
  utime: number;
  stime: number;
  threads: number;
  vsize: number;
  rssPages: number;
}

/** The fields of /proc/<pid>/stat the process list shows; the command name may hold spaces and ")" so fields start after the last ")". */
export function parsePidStat(text: string): PidStat | undefined {
  const close = text.lastIndexOf(")");
  if (close < 0) return undefined;
  const f = text
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  if (f.length < 22) return undefined;
  return {
    state: f[0]!,
    ppid: Number(f[1]),
    utime: toUint(f[11]),
    stime: toUint(f[12]),
    threads: Number(f[17]),
    vsize: toUint(f[20]),
    rssPages: toUint(f[21]),
  };
}

export interface SocketEntry {
  localIp: string;
  localPort: number;
  remoteIp: string;
  remotePort: number;
  state: number;
  txQueue: number;
  rxQueue: number;
  timerActive: number;
  timerWhen: number;
  retransmits: number;
  uid: number;
  timeout: number;
  inode: number;
  ref: number;
  /** A kernel address: above 2^53, so kept exact as a decimal string (protobufjs encodes it as uint64). */
  pointer: string;
}

// The kernel prints each 32-bit word of an address in host byte order (little-endian here).
function socketAddress(hex: string): string {
  const bytes = Buffer.from(hex, "hex");
  for (let i = 0; i + 4 <= bytes.length; i += 4) bytes.subarray(i, i + 4).reverse();
  if (bytes.length === 4) return [...bytes].join(".");
  return ipv6Text(bytes);
}

const hexNum = (s: string | undefined) => (s ? parseInt(s, 16) || 0 : 0);

/** /proc/net/{tcp,tcp6,udp,udp6,udplite,udplite6,raw,raw6}: one entry per socket line. */
export function parseSocketTable(text: string): SocketEntry[] {
  const out: SocketEntry[] = [];
  for (const line of text.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 12) continue;
    const [localHex, localPort] = f[1]!.split(":");
    const [remoteHex, remotePort] = f[2]!.split(":");
    const [tx, rx] = f[4]!.split(":");
    const [tr, when] = f[5]!.split(":");
    out.push({
      localIp: socketAddress(localHex!),
      localPort: hexNum(localPort),
      remoteIp: socketAddress(remoteHex!),
      remotePort: hexNum(remotePort),
      state: hexNum(f[3]),
      txQueue: hexNum(tx),
      rxQueue: hexNum(rx),
      timerActive: hexNum(tr),
      timerWhen: hexNum(when),
      retransmits: hexNum(f[6]),
      uid: toUint(f[7]),
      timeout: toUint(f[8]),
      inode: toUint(f[9]),
      ref: toUint(f[10]),
      pointer: /^[0-9a-fA-F]+$/.test(f[11]!) ? BigInt(`0x${f[11]}`).toString() : "0",
    });
  }
  return out;
}
