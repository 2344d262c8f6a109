// The user's journey with one machine (one disk) across its boots: the ISO in
// maintenance mode, apply-config, install and kexec into the installed system,
// mutual TLS, partitions and mounts over the API, a live hostname change, a VLAN and
// bonds in three modes built, changed in place and removed live (the first boot has a second NIC), Reboot by kexec (the
// ISO still attached: the disk's config wins), a POWERCYCLE reboot into a cold BIOS boot
// from the disk alone, and Reset of STATE and EPHEMERAL back to maintenance mode.
import assert from "node:assert/strict";
import { once } from "node:events";
import net from "node:net";
import { test } from "node:test";
import { parseAllDocuments } from "yaml";
import { ApplyMode } from "../../agent/src/api/enums.js";
import type { NodeClient } from "../../agent/src/client/client.js";
import { parseTalosconfig } from "../../agent/src/client/talosconfig.js";
import { generateConfigs } from "../../agent/src/config/generate/index.js";
import { artifactsPresent, bootNode, systemPartitionNames, waitFor, type BootedNode } from "./qemu.js";
import { startCapture } from "../integration/helpers/pcap-stream.js";
import { ipv4TcpPortFilter, TCP_ACK, TCP_SYN, tcpSegment } from "./pcap.js";
import { expectServicesHealthy, expectTalosCgroups, namesUnder } from "./node-checks.js";

const bootMs = Number(process.env.BASALT_E2E_BOOT_TIMEOUT_MS ?? 600_000);
const disk = "install-journey";

type Versioned = { messages: { version: { tag: string } }[] };
type MountsReply = { messages: { stats: { filesystem: string; mounted_on: string }[] }[] };
type ResourceReply = { resource: { spec: { yaml_spec: string } } };

/** The journey's config also loads a kernel module, writes files and sets an environment variable (checked once installed). */
function withMachineSettings(config: string): string {
  const docs = parseAllDocuments(config);
  docs[0]!.setIn(["machine", "kernel"], { modules: [{ name: "dummy", parameters: ["numdummies=3"] }] });
  docs[0]!.setIn(
    ["machine", "files"],
    [
      { op: "create", path: "/var/lib/journey/hello.conf", content: "hello\n", permissions: 0o640 },
      { op: "append", path: "/etc/libaudit.conf", content: "# journey", permissions: 0o644 },
    ],
  );
  docs[0]!.setIn(["machine", "env"], { JOURNEY_EXAMPLE: "journey value" });
  return docs.map((d) => d.toString()).join("---\n");
}

/** The same configuration, installing to `disk`. */
function withInstallDisk(config: string, disk: string): string {
  const docs = parseAllDocuments(config);
  docs[0]!.setIn(["machine", "install", "disk"], disk);
  return docs.map((d) => d.toString()).join("---\n");
}

async function expectMaintenance(node: BootedNode) {
  const insecure = node.client();
  await waitFor(node, "maintenance API", () => insecure.disks(), bootMs);
  await assert.rejects(insecure.version(), /not implemented in maintenance mode/);
}

test("install journey: maintenance → install → mTLS → reboot → cold boot → reset", {
  skip: artifactsPresent() ? false : "image not built (npm run image)",
  timeout: 60 * 60_000,
}, async (t) => {
  const generated = await generateConfigs({
    clusterName: "journey",
    endpoint: "https://10.0.2.15:6443",
    installDisk: "/dev/vda",
  });
  const controlplane = withMachineSettings(generated.controlplane);
  const creds = parseTalosconfig(generated.talosconfig);
  // The second NIC (an isolated network) becomes a bond member in the live network step.
  let node = await bootNode({ name: "journey-1-iso", boot: "iso", disk, secondNic: true });
  t.after(() => node.stop({ removeDisk: true }));

  await t.test("the ISO boots into maintenance mode", () => expectMaintenance(node));

  await t.test(
    "apply-config naming the ISO's drive or a missing disk is refused (InvalidArgument); the node stays in maintenance",
    async () => {
      const insecure = node.client();
      const disks = (
        (await insecure.disks()) as { messages: { disks: { device_name: string }[] }[] }
      ).messages[0]!.disks.map((d) => d.device_name);
      assert.deepEqual(disks, ["/dev/vda"], "Disks lists the disk, not the ISO's /dev/sr0 (as Talos's disk list)");
      const refusals: [string, string][] = [
        [
          "/dev/sr0",
          'specified install disk is not a disk the node can install to: "/dev/sr0" (talosctl disks lists those)',
        ],
        ["/dev/sdz", 'specified install disk does not exist: "/dev/sdz"'],
      ];
      for (const [target, problem] of refusals) {
        await assert.rejects(
          insecure.applyConfiguration(withInstallDisk(controlplane, target), { mode: ApplyMode.REBOOT }),
          (e: Error & { code?: number; details?: string }) => {
            assert.equal(e.code, 3, `${target}: InvalidArgument, not ${e.code}: ${e.message}`);
            assert.equal(
              e.details,
              `configuration validation failed: 1 error occurred:\n\t* .machine.install.disk: ${problem}\n\n`,
            );
            return true;
          },
        );
      }
      await expectMaintenance(node);
      assert.doesNotMatch(node.console(), /configuration received in maintenance mode|task install/);
    },
  );

  await t.test("apply-config installs to /dev/vda and the installed system serves mutual TLS", async () => {
    await node.client().applyConfiguration(controlplane, { mode: ApplyMode.REBOOT });
    const admin = node.mtlsClient(creds);
    const version = await waitFor(
      node,
      "mTLS Version after install",
      () => admin.version() as Promise<Versioned>,
      bootMs,
    );
    assert.match(version.messages[0]!.version.tag, /basalt/);
    const console = node.console();
    for (const line of [
      /initialize sequence: done/,
      /task install \(1\/1\): done/,
      /task saveConfig \(1\/1\): done/,
      /task kexecPrepare/,
      /boot sequence: done/,
      /task mountEphemeralPartition \(1\/1\): done/,
    ]) {
      assert.match(console, line);
    }
  });

  const admin = () => node.mtlsClient(creds);

  await t.test("six partitions with Talos's names, STATE and EPHEMERAL mounted", async () => {
    const c = admin();
    assert.deepEqual(await systemPartitionNames(c, "vda"), ["EFI", "BIOS", "BOOT", "META", "STATE", "EPHEMERAL"]);
    const mounts = ((await c.mounts()) as MountsReply).messages[0]!.stats;
    assert.ok(
      mounts.some((m) => m.mounted_on === "/var" && m.filesystem === "/dev/vda6"),
      "EPHEMERAL at /var",
    );
    assert.ok(
      mounts.some((m) => m.mounted_on === "/system/state" && m.filesystem === "/dev/vda5"),
      "STATE at /system/state",
    );
    // apid runs unprivileged, as on Talos: uid/gid 50 (found by its command line under /proc).
    const procs = (await c.collect<{ name: string }>(c.machine, "List", { root: "/proc", recurse: false }))
      .map((f) => f.name)
      .filter((n) => /^\/proc\/\d+$/.test(n));
    let apidStatus = "";
    for (const p of procs) {
      const cmdline = await c.read(`${p}/cmdline`).catch(() => Buffer.alloc(0));
      if (cmdline.toString().split("\0").includes("apid")) apidStatus = (await c.read(`${p}/status`)).toString();
    }
    assert.match(apidStatus, /^Uid:\s+50\s/m, "apid's uid");
    assert.match(apidStatus, /^Gid:\s+50\s/m, "apid's gid");
    const state = (await c.resourceGet("runtime", "MountStatuses.runtime.talos.dev", "STATE")) as ResourceReply;
    assert.match(state.resource.spec.yaml_spec, /target: \/system\/state/);
  });

  await t.test(
    "containerd runs: Running and healthy in ServiceList, answering Containers (no containers) in namespace system",
    async () => {
      const c = admin();
      type Services = { messages: { services: { id: string; state: string; health: { healthy: boolean } }[] }[] };
      const containerd = await waitFor(
        node,
        "containerd Running and healthy",
        async () => {
          const s = ((await c.serviceList()) as Services).messages[0]!.services.find((x) => x.id === "containerd");
          if (s?.state !== "Running" || !s.health.healthy) throw new Error(`containerd: ${JSON.stringify(s)}`);
          return s;
        },
        120_000,
      );
      assert.equal(containerd.state, "Running");
      const reply = (await c.unary(c.machine, "Containers", { namespace: "system", driver: 0 })) as {
        messages: { containers: unknown[] }[];
      };
      assert.deepEqual(reply.messages[0]!.containers, []);
    },
  );

  await t.test(
    "services: udevd and syslogd run; Talos's cgroups hold machined, apid and udevd; the dashboard shows tty2; Logs answers",
    async () => {
      const c = admin();
      await expectServicesHealthy(node, c, ["apid", "machined", "syslogd", "trustd", "udevd"], 120_000);
      await expectTalosCgroups(c);
      // The dashboard (no health check, as Talos's) shows the console summary on tty2.
      assert.equal(
        (
          (await c.serviceList()) as { messages: { services: { id: string; state: string }[] }[] }
        ).messages[0]!.services.find((s) => s.id === "dashboard")?.state,
        "Running",
      );
      assert.equal((await c.read("/sys/class/tty/tty0/active")).toString(), "tty2\n");
      // Drawing the summary and its kernel-log pane (the terminal's size, /dev/kmsg followed) never failed.
      const dashboardEvents = (
        (await c.serviceList()) as { messages: { services: { id: string; events: { events: { msg: string }[] } }[] }[] }
      ).messages[0]!.services.find((s) => s.id === "dashboard")!.events.events.map((e) => e.msg);
      assert.deepEqual(
        dashboardEvents.filter((m) => /Error running|going to restart|Failed/.test(m)),
        [],
        dashboardEvents.join("\n"),
      );
      // udevd's trigger and settle made the by-* links.
      assert.deepEqual(
        (await namesUnder(c, "/dev/disk/by-partlabel")).filter((n) => ["STATE", "EPHEMERAL"].includes(n)).sort(),
        ["EPHEMERAL", "STATE"],
      );
      const logs = Buffer.concat(
        (await c.collect<{ bytes: Buffer }>(c.machine, "Logs", { namespace: "system", id: "apid", tail_lines: 5 })).map(
          (d) => d.bytes,
        ),
      ).toString();
      // apid may have printed fewer than 5 lines since its start; the tail is its last lines, whole.
      const lines = logs.split("\n");
      assert.ok(lines.length >= 2 && lines.length <= 6 && lines.at(-1) === "", logs);
      await assert.rejects(
        c.collect(c.machine, "Logs", { namespace: "system", id: "nosuchservice", tail_lines: -1 }),
        /log "nosuchservice" was not registered/,
      );
    },
  );

  await t.test(
    "AdjtimeStatus node reports the kernel's clock discipline, consistent with itself as the kernel keeps it",
    async () => {
      const yaml = (
        (await admin().resourceGet("runtime", "AdjtimeStatuses.v1alpha1.talos.dev", "node")) as ResourceReply
      ).resource.spec.yaml_spec;
      const field = (k: string) => new RegExp(`^${k}: (.*)$`, "m").exec(yaml)?.[1] ?? "";
      const unsync = field("status").split(" | ").includes("STA_UNSYNC");
      assert.equal(field("syncStatus"), String(!unsync), yaml);
      // adjtimex answers TIME_ERROR whenever the clock is unsynchronized.
      if (unsync) assert.equal(field("state"), "TIME_ERROR", yaml);
      assert.match(field("state"), /^TIME_(OK|INS|DEL|OOP|WAIT|ERROR)$/, yaml);
      assert.match(field("maxError"), /^[0-9hm.]+(ns|µs|ms|s)$/, yaml);
    },
  );

  await t.test(
    "machine config: .machine.kernel.modules loaded with its parameters, .machine.files written, .machine.env in apid's environment",
    async () => {
      const c = admin();
      // dummy's numdummies is not readable in sysfs (mode 0): the three links it made show it.
      assert.equal((await c.read("/sys/module/dummy/initstate")).toString(), "live\n");
      assert.deepEqual((await namesUnder(c, "/sys/class/net")).filter((n) => /^dummy\d+$/.test(n)).sort(), [
        "dummy0",
        "dummy1",
        "dummy2",
      ]);
      const modules = (await c.resourceGet("runtime", "KernelModuleSpecs.runtime.talos.dev", "dummy")) as ResourceReply;
      assert.equal(modules.resource.spec.yaml_spec, "string: dummy\nparameters:\n    - numdummies=3\n");
      assert.equal((await c.read("/var/lib/journey/hello.conf")).toString(), "hello\n");
      const audit = (await c.read("/etc/libaudit.conf")).toString();
      assert.ok(audit.endsWith("\n# journey"), audit);
      assert.equal((await c.read("/var/etc/libaudit.conf")).toString(), audit, "written to /var and bound over /etc");
      const mounts = ((await c.mounts()) as MountsReply).messages[0]!.stats;
      assert.ok(
        mounts.some((m) => m.mounted_on === "/etc/libaudit.conf"),
        "bind mount over /etc/libaudit.conf",
      );
      const procs = (await c.collect<{ name: string }>(c.machine, "List", { root: "/proc", recurse: false }))
        .map((f) => f.name)
        .filter((n) => /^\/proc\/\d+$/.test(n));
      // apid is the agent's one process besides machined (trustd runs inside machined).
      let apidEnv = "";
      for (const p of procs) {
        const argv = (await c.read(`${p}/cmdline`).catch(() => Buffer.alloc(0))).toString().split("\0");
        if (argv.includes("apid")) apidEnv = (await c.read(`${p}/environ`)).toString();
      }
      assert.ok(apidEnv.split("\0").includes("JOURNEY_EXAMPLE=journey value"), "apid's environment");
    },
  );

  await t.test(
    "PacketCapture on the API link, filtered by BPF to TCP port 50000: the pcap header as asked, and a new connection's one SYN",
    async () => {
      const c = admin();
      const addresses = (await c.resourceList("network", "AddressStatuses.net.talos.dev")) as {
        resource: { metadata: { id: string } };
      }[];
      const apiLink = addresses.map((a) => a.resource.metadata.id).find((id) => /\/10\.0\.2\.\d+\/\d+$/.test(id))!;
      const snap = 96;
      const capture = startCapture(c, {
        interface: apiLink.split("/")[0],
        snap_len: snap,
        bpf_filter: ipv4TcpPortFilter(50000),
      });
      await capture.until(() => capture.header() !== undefined);
      // Nanosecond libpcap magic, version 2.4, zone and sigfigs 0, the snap length asked, LINKTYPE_ETHERNET.
      assert.equal(capture.header()?.toString("hex"), "4d3cb2a10200040000000000000000006000000001000000");
      // A connection of our own through QEMU's forward (the guest sees QEMU's source port), then an API call.
      const socket = net.connect(node.apiPort, "127.0.0.1");
      await once(socket, "connect");
      socket.destroy();
      await c.version();
      const segments = () => capture.records.map((r) => tcpSegment(r.data));
      const syns = () =>
        segments().filter((s) => s && s.dstPort === 50000 && (s.flags & (TCP_SYN | TCP_ACK)) === TCP_SYN);
      await capture.until(() =>
        syns().some((syn) =>
          segments().some((s) => s?.srcPort === 50000 && s.dstPort === syn!.srcPort && (s.flags & TCP_SYN) !== 0),
        ),
      );
      capture.stream.cancel();
      await capture.ended;
      for (const [i, r] of capture.records.entries()) {
        assert.ok(r.data.length <= snap && r.data.length <= r.length, `record ${i}: ${r.data.length} of ${r.length}`);
        const s = tcpSegment(r.data);
        assert.ok(s && (s.srcPort === 50000 || s.dstPort === 50000), `record ${i}: ${r.data.toString("hex")}`);
      }
      assert.equal(syns().length, 1, JSON.stringify(segments()));
    },
  );

  await t.test("a no-reboot hostname change shows in HostnameStatus", async () => {
    const c = admin();
    const patched = controlplane.replace(/^(\s+)network: \{\}$/m, "$1network:\n$1    hostname: journey-node");
    assert.notEqual(patched, controlplane, "the generated config has machine.network: {}");
    const reply = (await c.applyConfiguration(patched, { mode: ApplyMode.NO_REBOOT })) as {
      messages: { mode_details: string }[];
    };
    assert.equal(reply.messages[0]!.mode_details, "Applied configuration without a reboot");
    await waitFor(
      node,
      "hostname status",
      async () => {
        const res = (await c.resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname")) as ResourceReply;
        assert.match(res.resource.spec.yaml_spec, /hostname: journey-node/);
      },
      60_000,
    );
  });

  await t.test(
    "a NO_REBOOT apply builds a VLAN and active-backup, balance-rr and 802.3ad bonds (LinkStatus, the kernel's options), a second changes bond options in place, a third removes them",
    async () => {
      const c = admin();
      type Listed = { resource: { metadata: { id: string }; spec: { yaml_spec: string } } }[];
      const list = async (type: string) =>
        new Map(
          ((await c.resourceList("network", type)) as Listed).map(
            (r) => [r.resource.metadata.id, r.resource.spec.yaml_spec] as const,
          ),
        );
      const links = await list("LinkStatuses.net.talos.dev");
      const physical = [...links]
        .filter(([, y]) => /^type: ether$/m.test(y) && /^kind: ""$/m.test(y))
        .map(([id]) => id)
        .sort();
      // udev's predictable names: virtio-net in q35's PCI slots 3 and 5 (slot 4 is the RNG).
      assert.deepEqual(physical, ["enp0s3", "enp0s5"], `two NICs: ${[...links.keys()].join(" ")}`);
      const addresses = [...(await list("AddressStatuses.net.talos.dev")).keys()];
      const apiLink = physical.find((l) => addresses.some((a) => a.startsWith(`${l}/10.0.2.`)))!;
      const second = physical.find((l) => l !== apiLink)!;
      const hostnameOnly = controlplane.replace(/^(\s+)network: \{\}$/m, "$1network:\n$1    hostname: journey-node");
      const withLinks = controlplane.replace(/^(\s+)network: \{\}$/m, (_, i: string) =>
        [
          `${i}network:`,
          `${i}    hostname: journey-node`,
          `${i}    interfaces:`,
          `${i}        - interface: ${apiLink}`,
          `${i}          dhcp: true`,
          `${i}          vlans:`,
          `${i}              - vlanId: 100`,
          `${i}                addresses: [172.20.0.2/24]`,
          `${i}        - interface: bond0`,
          `${i}          addresses: [172.21.0.2/24]`,
          `${i}          bond:`,
          `${i}              mode: active-backup`,
          `${i}              miimon: 100`,
          `${i}              interfaces: [${second}]`,
          // Member-less bonds in the modes whose options the kernel refuses elsewhere (packets_per_slave, lacp_rate, ad_actor_sys_prio).
          `${i}        - interface: bond1`,
          `${i}          bond:`,
          `${i}              mode: balance-rr`,
          `${i}              packetsPerSlave: 2`,
          `${i}        - interface: bond2`,
          `${i}          bond:`,
          `${i}              mode: 802.3ad`,
          `${i}              lacpRate: fast`,
          `${i}              miimon: 100`,
        ].join("\n"),
      );
      const reply = (await c.applyConfiguration(withLinks, { mode: ApplyMode.NO_REBOOT })) as {
        messages: { mode_details: string }[];
      };
      assert.equal(reply.messages[0]!.mode_details, "Applied configuration without a reboot");
      await waitFor(
        node,
        "vlan and bond in LinkStatus",
        async () => {
          const now = await list("LinkStatuses.net.talos.dev");
          assert.match(now.get(`${apiLink}.100`) ?? "", /^kind: vlan$/m);
          for (const bond of ["bond0", "bond1", "bond2"]) assert.match(now.get(bond) ?? "", /^kind: bond$/m, bond);
          assert.match(now.get(second) ?? "", /^slaveKind: bond$/m);
          const addrs = await list("AddressStatuses.net.talos.dev");
          assert.ok(
            addrs.has(`${apiLink}.100/172.20.0.2/24`) && addrs.has("bond0/172.21.0.2/24"),
            [...addrs.keys()].join(" "),
          );
        },
        120_000,
      );
      const bondIndex = /^index: (\d+)$/m.exec((await list("LinkStatuses.net.talos.dev")).get("bond0")!)![1];
      assert.match(
        (await list("LinkStatuses.net.talos.dev")).get(second)!,
        new RegExp(`^masterIndex: ${bondIndex}$`, "m"),
      );
      // The kernel took each mode's options: the config's, and Talos's defaults where the config is silent.
      const sysfs = async (bond: string, option: string) =>
        (await c.read(`/sys/class/net/${bond}/bonding/${option}`)).toString().trim();
      const took = async (bond: string, options: string[]) =>
        Promise.all(options.map(async (o) => `${o}=${await sysfs(bond, o)}`));
      assert.deepEqual(await took("bond0", ["mode", "miimon", "resend_igmp", "lp_interval", "num_grat_arp"]), [
        "mode=active-backup 1",
        "miimon=100",
        "resend_igmp=1",
        "lp_interval=1",
        "num_grat_arp=1",
      ]);
      assert.deepEqual(await took("bond1", ["mode", "packets_per_slave", "miimon"]), [
        "mode=balance-rr 0",
        "packets_per_slave=2",
        "miimon=0",
      ]);
      assert.deepEqual(await took("bond2", ["mode", "lacp_rate", "ad_actor_sys_prio", "miimon", "xmit_hash_policy"]), [
        "mode=802.3ad 4",
        "lacp_rate=fast 1",
        "ad_actor_sys_prio=65535",
        "miimon=100",
        "xmit_hash_policy=layer2 0",
      ]);

      // Options changed by a NO_REBOOT apply are changed in place, as Talos does: the same links (ifindex), the member back in its bond.
      const indexOf = (statuses: Map<string, string>, link: string) =>
        /^index: (\d+)$/m.exec(statuses.get(link) ?? "")?.[1];
      const before = await list("LinkStatuses.net.talos.dev");
      const changed = withLinks
        .replace(/(mode: active-backup\n\s+miimon: )100/, "$1200")
        .replace(/lacpRate: fast/, "lacpRate: slow");
      assert.notEqual(changed.replace(/lacpRate: slow/, "lacpRate: fast"), withLinks, "miimon replaced");
      await c.applyConfiguration(changed, { mode: ApplyMode.NO_REBOOT });
      await waitFor(
        node,
        "bond options changed in place",
        async () => {
          assert.deepEqual(await took("bond0", ["miimon"]), ["miimon=200"]);
          assert.deepEqual(await took("bond2", ["lacp_rate"]), ["lacp_rate=slow 0"]);
          const now = await list("LinkStatuses.net.talos.dev");
          assert.match(
            now.get(second) ?? "",
            new RegExp(`^masterIndex: ${bondIndex}$`, "m"),
            "the member back in bond0",
          );
          assert.match(
            now.get("bond0") ?? "",
            /^bondMaster:\n(?: {4}.*\n)*? {4}miimon: 200$/m,
            "LinkStatus decodes the kernel's bond settings",
          );
          assert.deepEqual(
            ["bond0", "bond2"].map((b) => indexOf(now, b)),
            ["bond0", "bond2"].map((b) => indexOf(before, b)),
            "same ifindex",
          );
          assert.ok((await list("AddressStatuses.net.talos.dev")).has("bond0/172.21.0.2/24"));
        },
        120_000,
      );
      assert.deepEqual(await took("bond0", ["mode", "resend_igmp"]), ["mode=active-backup 1", "resend_igmp=1"]);

      await c.applyConfiguration(hostnameOnly, { mode: ApplyMode.NO_REBOOT });
      await waitFor(
        node,
        "vlan and bond removed",
        async () => {
          const now = await list("LinkStatuses.net.talos.dev");
          assert.equal(
            ["bond0", "bond1", "bond2", `${apiLink}.100`].some((l) => now.has(l)),
            false,
            [...now.keys()].join(" "),
          );
          assert.match(now.get(second) ?? "", /^slaveKind: ""$/m);
        },
        120_000,
      );
      assert.match(
        ((await c.resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname")) as ResourceReply).resource.spec
          .yaml_spec,
        /hostname: journey-node/,
      );
    },
  );

  let bootId = "";
  await t.test(
    "Reboot kexecs into the installed system (same VM, the ISO still attached): a new boot_id, the disk's config used",
    async () => {
      const c = admin();
      bootId = (await c.read("/proc/sys/kernel/random/boot_id")).toString().trim();
      const before = node.console().length;
      await c.reboot();
      await waitFor(
        node,
        "mTLS in a new boot after the kexec",
        async () => {
          const next = (await admin().read("/proc/sys/kernel/random/boot_id")).toString().trim();
          assert.notEqual(next, bootId);
          bootId = next;
        },
        bootMs,
      );
      const rebooted = node.console().slice(before);
      assert.match(rebooted, /kexec into the installed system/);
      assert.match(rebooted, /loaded stored configuration/);
    },
  );

  await t.test(
    "Reboot mode POWERCYCLE goes through the firmware; cold boot from the disk alone, legacy BIOS",
    async () => {
      await admin().reboot(1);
      await node.exited;
      await node.stop({ removeDisk: false });
      node = await bootNode({ name: "journey-3-cold-bios", boot: "disk", firmware: "bios", disk, freshDisk: false });
      const c = node.mtlsClient(creds);
      await waitFor(node, "mTLS after a cold BIOS boot", () => c.version(), bootMs);
      const res = (await c.resourceGet("network", "HostnameStatuses.net.talos.dev", "hostname")) as ResourceReply;
      assert.match(res.resource.spec.yaml_spec, /hostname: journey-node/, "the live-applied config was stored");
    },
  );

  await t.test("Reset of STATE and EPHEMERAL kexecs back into maintenance mode", async () => {
    const c: NodeClient = node.mtlsClient(creds);
    const before = node.console().length;
    await c.reset({ wipe: ["STATE", "EPHEMERAL"], reboot: true });
    await expectMaintenance(node);
    const reset = node.console().slice(before);
    assert.match(reset, /kexec into the installed system/);
    assert.match(reset, /formatting STATE/);
  });
});
