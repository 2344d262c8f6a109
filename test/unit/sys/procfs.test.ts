import assert from "node:assert/strict";
import { test } from "node:test";
import { ipv6Text } from "../../../agent/src/sys/ip-text.js";
import {
  parseCpuinfo,
  parseDiskstats,
  parseLoadavg,
  parseMeminfo,
  parseNetDev,
  parsePidStat,
  parseSocketTable,
  parseStat,
} from "../../../agent/src/sys/procfs.js";

test("meminfo: each key in its MemInfo field (kB as written, HugePages_* as counts), fields the kernel omits are 0", () => {
  const m = parseMeminfo(
    "MemTotal:       24683656 kB\nMemFree:        18076188 kB\nActive(anon):       1596 kB\nInactive(file):  3251568 kB\n" +
      "NFS_Unstable:          7 kB\nCommitted_AS:     759888 kB\nHugePages_Total:       3\nHugepagesize:       2048 kB\n" +
      "DirectMap4k:       20480 kB\nDirectMap1G:    25165824 kB\nZswap:                 9 kB\n",
  );
  assert.equal(Object.keys(m).length, 48);
  assert.deepEqual(Object.fromEntries(Object.entries(m).filter(([, v]) => v !== 0)), {
    memtotal: 24683656,
    memfree: 18076188,
    activeanon: 1596,
    inactivefile: 3251568,
    nfsunstable: 7,
    committedas: 759888,
    hugepagestotal: 3,
    hugepagesize: 2048,
    directmap4k: 20480,
    directmap1g: 25165824,
  });
});

test("cpuinfo (x86): one entry per processor block, numbers parsed, flags and bugs split", () => {
  const text =
    "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\nstepping\t: 1\nmicrocode\t: 0x1000065\n" +
    "cpu MHz\t\t: 2445.406\ncache size\t: 512 KB\nphysical id\t: 0\nsiblings\t: 2\ncore id\t\t: 1\ncpu cores\t: 2\napicid\t\t: 1\ninitial apicid\t: 1\n" +
    "fpu\t\t: yes\nfpu_exception\t: yes\ncpuid level\t: 16\nwp\t\t: yes\nflags\t\t: fpu vme de\nbugs\t\t: sysret_ss_attrs spectre_v1\nbogomips\t: 4890.81\n" +
    "TLB size\t: 2560 4K pages\nclflush size\t: 64\ncache_alignment\t: 64\naddress sizes\t: 48 bits physical, 48 bits virtual\npower management:\n\n" +
    "processor\t: 1\nvendor_id\t: AuthenticAMD\n\n";
  const cpus = parseCpuinfo(text);
  assert.equal(cpus.length, 2);
  assert.deepEqual(cpus[0], {
    processor: 0,
    vendor_id: "AuthenticAMD",
    cpu_family: "25",
    model: "1",
    model_name: "AMD EPYC",
    stepping: "1",
    microcode: "0x1000065",
    cpu_mhz: 2445.406,
    cache_size: "512 KB",
    physical_id: "0",
    siblings: 2,
    core_id: "1",
    cpu_cores: 2,
    apic_id: "1",
    initial_apic_id: "1",
    fpu: "yes",
    fpu_exception: "yes",
    cpu_id_level: 16,
    wp: "yes",
    flags: ["fpu", "vme", "de"],
    bugs: ["sysret_ss_attrs", "spectre_v1"],
    bogo_mips: 4890.81,
    cl_flush_size: 64,
    cache_alignment: 64,
    address_sizes: "48 bits physical, 48 bits virtual",
    power_management: "",
  });
  assert.equal(cpus[1]!.processor, 1);
  assert.equal(cpus[1]!.vendor_id, "AuthenticAMD");
});

test("cpuinfo (arm64): Features and BogoMIPS fill flags and bogo_mips, the CPU ids vendor, model and stepping", () => {
  const [cpu] = parseCpuinfo(
    "processor\t: 0\nBogoMIPS\t: 125.00\nFeatures\t: fp asimd evtstrm\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd07\nCPU revision\t: 0\n",
  );
  assert.deepEqual(
    [cpu!.bogo_mips, cpu!.flags, cpu!.vendor_id, cpu!.cpu_family, cpu!.model, cpu!.stepping],
    [125, ["fp", "asimd", "evtstrm"], "0x41", "8", "0xd07", "0"],
  );
});

test("loadavg", () => {
  assert.deepEqual(parseLoadavg("15.41 9.59 4.30 3/1030 4953\n"), { load1: 15.41, load5: 9.59, load15: 4.3 });
});

test("stat: CPU times in seconds (USER_HZ 100), per-CPU by index, interrupts, counters, softirqs", () => {
  const s = parseStat(
    "cpu  40529 0 5860 23165 223 0 56 501 0 0\ncpu0 100 1 2 3 4 5 6 7 8 9\ncpu1 200 0 0 0 0 0 0 0 0 0\nintr 1000 5 0 7\nctxt 123456\n" +
      "btime 1764000000\nprocesses 4321\nprocs_running 3\nprocs_blocked 1\nsoftirq 900 1 2 3 4 5 6 7 8 9 10\n",
  );
  assert.deepEqual(s.cpu_total, {
    user: 405.29,
    nice: 0,
    system: 58.6,
    idle: 231.65,
    iowait: 2.23,
    irq: 0,
    soft_irq: 0.56,
    steal: 5.01,
    guest: 0,
    guest_nice: 0,
  });
  assert.equal(s.cpu.length, 2);
  assert.deepEqual(s.cpu[0], {
    user: 1,
    nice: 0.01,
    system: 0.02,
    idle: 0.03,
    iowait: 0.04,
    irq: 0.05,
    soft_irq: 0.06,
    steal: 0.07,
    guest: 0.08,
    guest_nice: 0.09,
  });
  assert.equal(s.cpu[1]!.user, 2);
  assert.deepEqual(
    [s.irq_total, s.irq, s.context_switches, s.boot_time, s.process_created, s.process_running, s.process_blocked],
    [1000, [5, 0, 7], 123456, 1764000000, 4321, 3, 1],
  );
  assert.equal(s.soft_irq_total, 900);
  assert.deepEqual(s.soft_irq, {
    hi: 1,
    timer: 2,
    net_tx: 3,
    net_rx: 4,
    block: 5,
    block_io_poll: 6,
    tasklet: 7,
    sched: 8,
    hrtimer: 9,
    rcu: 10,
  });
});

test("net/dev: devices in file order, the total named by the sorted names", () => {
  const { devices, total } = parseNetDev(
    "Inter-|   Receive                                                |  Transmit\n" +
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n" +
      "  eth0: 100 2 3 4 5 6 7 8 200 9 10 11 12 13 14 15\n    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n",
  );
  assert.deepEqual(
    devices.map((d) => d.name),
    ["eth0", "lo"],
  );
  assert.deepEqual(devices[0], {
    name: "eth0",
    rx_bytes: 100,
    rx_packets: 2,
    rx_errors: 3,
    rx_dropped: 4,
    rx_fifo: 5,
    rx_frame: 6,
    rx_compressed: 7,
    rx_multicast: 8,
    tx_bytes: 200,
    tx_packets: 9,
    tx_errors: 10,
    tx_dropped: 11,
    tx_fifo: 12,
    tx_collisions: 13,
    tx_carrier: 14,
    tx_compressed: 15,
  });
  assert.equal(total.name, "eth0, lo");
  assert.equal(total.rx_bytes, 101);
  assert.equal(total.tx_packets, 10);
});

test("diskstats: lines of 18+ columns, in order, and their sum; shorter lines skipped as Talos skips them", () => {
  const { devices, total } = parseDiskstats(
    "   7       0 loop0 438 0 13098 67 428 2032 807904 98 0 128 220 6 0 1024 3 0 0\n 253 0 vda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n   8 1 old 1 2 3 4 5 6 7 8 9 10 11\n",
  );
  assert.deepEqual(
    devices.map((d) => d.name),
    ["loop0", "vda"],
  );
  assert.deepEqual(devices[1], {
    name: "vda",
    read_completed: 1,
    read_merged: 2,
    read_sectors: 3,
    read_time_ms: 4,
    write_completed: 5,
    write_merged: 6,
    write_sectors: 7,
    write_time_ms: 8,
    io_in_progress: 9,
    io_time_ms: 10,
    io_time_weighted_ms: 11,
    discard_completed: 12,
    discard_merged: 13,
    discard_sectors: 14,
    discard_time_ms: 15,
  });
  assert.deepEqual(
    [total.name, total.read_completed, total.write_sectors, total.discard_sectors],
    ["", 439, 807911, 1038],
  );
});

test("pid stat: fields after the last ')' (a command with spaces and parentheses)", () => {
  const st = parsePidStat(
    "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 7 0 5000 1037189120 12000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0",
  );
  assert.deepEqual(st, { state: "S", ppid: 1, utime: 150, stime: 25, threads: 7, vsize: 1037189120, rssPages: 12000 });
  assert.equal(parsePidStat("garbage"), undefined);
});

test("socket tables: addresses in host byte order, hex ports and queues, decimal uid/inode, the pointer exact", () => {
  const tcp = parseSocketTable(
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
      "   0: 0100007F:0035 00000000:0000 0A 00000000:00000001 00:00000000 00000000   101        0 20231 1 ffff8a5c0b2e0000 100 0 0 10 0\n" +
      "   1: 0100007F:C350 0100007F:9C40 01 00000010:00000000 02:0000012C 00000003     0        7 40557 2 0000000000000000 20 4 30 10 -1\n",
  );
  assert.deepEqual(tcp[0], {
    localIp: "127.0.0.1",
    localPort: 53,
    remoteIp: "0.0.0.0",
    remotePort: 0,
    state: 10,
    txQueue: 0,
    rxQueue: 1,
    timerActive: 0,
    timerWhen: 0,
    retransmits: 0,
    uid: 101,
    timeout: 0,
    inode: 20231,
    ref: 1,
    pointer: BigInt("0xffff8a5c0b2e0000").toString(),
  });
  assert.deepEqual(
    [
      tcp[1]!.localPort,
      tcp[1]!.remotePort,
      tcp[1]!.state,
      tcp[1]!.txQueue,
      tcp[1]!.timerActive,
      tcp[1]!.timerWhen,
      tcp[1]!.retransmits,
      tcp[1]!.timeout,
      tcp[1]!.ref,
    ],
    [50000, 40000, 1, 16, 2, 300, 3, 7, 2],
  );
  const tcp6 = parseSocketTable(
    "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
      "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0000000000000000 100 0 0 10 0\n" +
      "   1: 0000000000000000FFFF00000100007F:1F90 B80D0120000000000000000001000000:0050 01 00000000:00000000 00:00000000 00000000     0        0 778 1 0000000000000000 100 0 0 10 0\n",
  );
  assert.deepEqual(
    tcp6.map((e) => [e.localIp, e.localPort, e.remoteIp, e.remotePort]),
    [
      ["::1", 8080, "::", 0],
      ["127.0.0.1", 8080, "2001:db8::1", 80],
    ],
  );
});

test("IPv6 text as Go prints it: the longest zero run compressed, single zero groups kept", () => {
  const b = (hex: string) => Buffer.from(hex, "hex");
  assert.equal(ipv6Text(b("fe800000000000000000000000000001")), "fe80::1");
  assert.equal(ipv6Text(b("20010db8000000010000000000000001")), "2001:db8:0:1::1");
  assert.equal(ipv6Text(b("20010db8000100010001000100010001")), "2001:db8:1:1:1:1:1:1");
  assert.equal(ipv6Text(b("00000000000000000000000000000000")), "::");
});
