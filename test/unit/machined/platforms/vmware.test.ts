import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { gzipSync } from "node:zlib";
import { logger } from "../../../../agent/src/log.js";
import { PlatformUserDataError, readCloudUserData } from "../../../../agent/src/machined/platforms/cloud-source.js";
import { MetadataError } from "../../../../agent/src/machined/platforms/metadata-http.js";
import {
  NotVmwareError,
  ovfProperty,
  parseVmwareMetadata,
  vmware,
} from "../../../../agent/src/machined/platforms/vmware.js";
import { guestInfo, RpciError } from "../../../../agent/src/machined/platforms/vmware-rpci.js";
import { PlatformDataError, withLinksByMac } from "../../../../agent/src/network/platform-config.js";
import { fixtureText, fixtureYaml, link, platformIo, ScriptedHttp } from "./helpers.js";
import { FakeVmwareHost } from "../../../integration/helpers/vmware-host.js";

const b64 = (s: string | Buffer) => Buffer.from(s).toString("base64");
const guestinfoCmdline = new Map([["talos.config", ["guestinfo"]]]);
/** A node on `host`, booted with talos.config=guestinfo unless `cmdline` says otherwise. */
const on = (host: FakeVmwareHost, cmdline = guestinfoCmdline) =>
  platformIo(new ScriptedHttp(new Map()), new Map(), new Map(), { cmdline, vmwareBackdoor: host });

/** An OVF environment as vSphere hands it over guestinfo.ovfenv. */
function ovfEnv(properties: Record<string, string>): string {
  const props = Object.entries(properties)
    .map(([k, v]) => `      <Property oe:key="${k}" oe:value="${v}"/>`)
    .join("\n");
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<Environment xmlns="http://schemas.dmtf.org/ovf/environment/1" xmlns:oe="http://schemas.dmtf.org/ovf/environment/1"',
    '    xmlns:ve="http://www.vmware.com/schema/ovfenv" oe:id="" ve:esxId="vm-42">',
    "  <PlatformSection><Kind>VMware ESXi</Kind><Version>8.0.2</Version></PlatformSection>",
    "  <PropertySection>",
    props,
    "  </PropertySection>",
    "</Environment>",
  ].join("\n");
}

describe("vmware guestinfo over the backdoor's RPCI channel", () => {
  it("sends the request byte for byte and reads replies of every length, closing each channel", () => {
    for (const value of ["", "a", "ab", "abc", "abcd", "abcde", "é✓ ok"]) {
      const host = new FakeVmwareHost(new Map([["talos.config", value]]));
      assert.equal(guestInfo(host, "talos.config"), value);
      // 31 bytes: the last word carries three.
      assert.deepEqual(host.requests, ["info-get guestinfo.talos.config"]);
      assert.equal(host.channels.size, 0);
    }
  });

  it("a key the VM does not have is undefined", () => {
    const host = new FakeVmwareHost();
    assert.equal(guestInfo(host, "userdata"), undefined);
    assert.deepEqual(host.requests, ["info-get guestinfo.userdata"]);
  });

  it("opens without cookies on a host that refuses them", () => {
    const host = new FakeVmwareHost(new Map([["metadata", "x"]]));
    host.cookies = false;
    assert.equal(guestInfo(host, "metadata"), "x");
    assert.equal(host.channels.size, 0);
  });

  it("a refused request is an RpciError, and its channel is closed", () => {
    const host = new FakeVmwareHost();
    host.refuse = "guestinfo";
    assert.throws(() => guestInfo(host, "talos.config"), RpciError);
    assert.equal(host.channels.size, 0);
  });
});

describe("vmware platform", () => {
  it("reads guestinfo.talos.config, base64, as the configuration; gzip stays for the caller", async () => {
    const config = gzipSync("version: v1alpha1\n");
    const host = new FakeVmwareHost(new Map([["talos.config", b64(config)]]));
    assert.deepEqual(await vmware.readUserData(on(host)), config);
    assert.deepEqual(host.requests, ["info-get guestinfo.talos.config"]);
  });

  it("falls back to guestinfo.userdata, then the OVF environment's talos.config, then its userdata", async () => {
    const userdata = new FakeVmwareHost(new Map([["userdata", b64("from userdata")]]));
    assert.equal((await vmware.readUserData(on(userdata)))?.toString(), "from userdata");
    assert.deepEqual(userdata.requests, ["info-get guestinfo.talos.config", "info-get guestinfo.userdata"]);

    const ovfUserdata = new FakeVmwareHost(new Map([["ovfenv", ovfEnv({ userdata: b64("ovf userdata") })]]));
    assert.equal((await vmware.readUserData(on(ovfUserdata)))?.toString(), "ovf userdata");
    assert.deepEqual(ovfUserdata.requests, [
      "info-get guestinfo.talos.config",
      "info-get guestinfo.userdata",
      "info-get guestinfo.ovfenv",
    ]);

    const both = new FakeVmwareHost(
      new Map([["ovfenv", ovfEnv({ userdata: b64("second"), "talos.config": b64("first") })]]),
    );
    assert.equal((await vmware.readUserData(on(both)))?.toString(), "first");
  });

  it("empty values are absent: no configuration, maintenance mode", async () => {
    const host = new FakeVmwareHost(
      new Map([
        ["talos.config", ""],
        ["ovfenv", ovfEnv({ "talos.config": "" })],
      ]),
    );
    assert.equal(await vmware.readUserData(on(host)), undefined);
    assert.equal(host.requests.length, 3);
  });

  it("reads nothing unless talos.config=guestinfo", async () => {
    const host = new FakeVmwareHost(new Map([["talos.config", b64("x")]]));
    assert.equal(await vmware.readUserData(on(host, new Map())), undefined);
    assert.equal(await vmware.readUserData(on(host, new Map([["talos.config", ["http://10.0.0.1/c"]]]))), undefined);
    assert.deepEqual(host.requests, []);
  });

  it("off VMware, or with a silent backdoor, the user data read fails without retrying", async () => {
    const qemu = new FakeVmwareHost(new Map([["talos.config", b64("x")]]));
    qemu.signature = "TCGTCGTCGTCG";
    await assert.rejects(vmware.readUserData(on(qemu)), (err: Error) => {
      assert.ok(err instanceof NotVmwareError);
      assert.equal(err.message, `not a VMware virtual machine: the CPU's hypervisor signature is "TCGTCGTCGTCG"`);
      return true;
    });
    const silent = new FakeVmwareHost();
    silent.answersVersion = false;
    await assert.rejects(vmware.readUserData(on(silent)), /the VMware backdoor does not answer/);
    let attempts = 0;
    const counting = vmware;
    await assert.rejects(
      readCloudUserData({
        platform: { ...counting, readUserData: (i) => (attempts++, counting.readUserData(i)) },
        io: on(qemu),
        signal: new AbortController().signal,
        networkReady: async () => undefined,
        log: logger("test"),
      }),
      PlatformUserDataError,
    );
    assert.equal(attempts, 1);
    assert.deepEqual(qemu.requests, []);
  });

  it("a value that is not base64 is a MetadataError", async () => {
    const host = new FakeVmwareHost(new Map([["talos.config", "not base64!"]]));
    await assert.rejects(vmware.readUserData(on(host)), MetadataError);
  });

  it("reads guestinfo.metadata: the link named eth1, its address, gateway, hostname and instance id", async () => {
    const host = new FakeVmwareHost(new Map([["metadata", b64(fixtureText("vmware/metadata-match-by-name.yaml"))]]));
    assert.deepEqual(await vmware.readNetwork(on(host)), fixtureYaml("vmware/expected-match-by-name.yaml"));
  });

  it("a link matched by MAC follows the node's link with that permanent address", async () => {
    const config = parseVmwareMetadata(fixtureText("vmware/metadata-match-by-mac.yaml"));
    assert.deepEqual(config.linkMacs, { eth0: "68:05:ca:b8:f1:f9" });
    const { linkMacs: _, ...specs } = withLinksByMac(config, [
      link("eth1", "68:05:ca:b8:f1:f8"),
      link("eth2", "68:05:ca:b8:f1:f9"),
    ]);
    assert.deepEqual(specs, fixtureYaml("vmware/expected-match-by-mac.yaml"));
  });

  it("the metadata from the OVF environment when guestinfo has none", async () => {
    const metadata = b64(fixtureText("vmware/metadata-match-by-name.yaml"));
    const host = new FakeVmwareHost(new Map([["ovfenv", ovfEnv({ metadata })]]));
    assert.deepEqual(await vmware.readNetwork(on(host)), fixtureYaml("vmware/expected-match-by-name.yaml"));
  });

  it("DHCP, MTU, IPv6 and resolvers; links not named eth* are left out", () => {
    const config = parseVmwareMetadata(
      [
        "instance-id: vm-7",
        "local-hostname: node-7.example.org",
        "network:",
        "  version: 2",
        "  ethernets:",
        "    ens192: { dhcp4: true }",
        "    id1:",
        "      set-name: eth1",
        "      mtu: 9000",
        "      dhcp4: true",
        "      dhcp4-overrides: { route-metric: 100 }",
        "      dhcp6: true",
        "      dhcp6-overrides: { route-metric: 300 }",
        "    eth0:",
        "      dhcp6: true",
        "      addresses: [ 2001:db8::5/64 ]",
        "      gateway6: 2001:db8::1",
        "      nameservers: { addresses: [ 10.0.0.2, 2001:db8::53 ] }",
      ].join("\n"),
    );
    assert.deepEqual(
      config.links.map((l) => [l.name, l.mtu]),
      [
        ["eth0", 0],
        ["eth1", 9000],
      ],
    );
    assert.deepEqual(
      config.operators.map((o) => [o.operator, o.linkName, o.dhcp4?.routeMetric ?? o.dhcp6?.routeMetric]),
      [
        ["dhcp6", "eth0", 2048],
        ["dhcp4", "eth1", 100],
        ["dhcp6", "eth1", 300],
      ],
    );
    assert.deepEqual(
      config.routes.map((r) => [r.family, r.gateway, r.outLinkName, r.priority]),
      [["inet6", "2001:db8::1", "eth0", 2048]],
    );
    assert.deepEqual(
      config.addresses.map((a) => [a.address, a.family]),
      [["2001:db8::5/64", "inet6"]],
    );
    assert.deepEqual(config.resolvers, [{ dnsServers: ["10.0.0.2", "2001:db8::53"], layer: "platform" }]);
    assert.deepEqual(config.hostnames, [{ hostname: "node-7", domainname: "example.org", layer: "platform" }]);
    assert.deepEqual(config.metadata, { platform: "vmware", hostname: "node-7.example.org", instanceId: "vm-7" });
  });

  it("metadata of another version, or a bad address, is refused", () => {
    assert.throws(() => parseVmwareMetadata("network:\n  version: 1\n"), PlatformDataError);
    assert.throws(
      () => parseVmwareMetadata("network:\n  version: 2\n  ethernets:\n    eth0: { addresses: [ 10.0.0.300/24 ] }\n"),
      PlatformDataError,
    );
  });

  it("without guestinfo.metadata, or off VMware, the network is only the platform's name", async () => {
    assert.deepEqual((await vmware.readNetwork(on(new FakeVmwareHost()))).metadata, { platform: "vmware" });
    const qemu = new FakeVmwareHost(new Map([["metadata", b64(fixtureText("vmware/metadata-match-by-name.yaml"))]]));
    qemu.signature = "";
    const config = await vmware.readNetwork(on(qemu));
    assert.deepEqual([config.metadata, config.links, qemu.requests], [{ platform: "vmware" }, [], []]);
  });

  it("ovfProperty decodes XML entities and knows an absent key", () => {
    const xml = ovfEnv({ a: "x &amp; y &#x41;" });
    assert.equal(ovfProperty(xml, "a"), "x & y A");
    assert.equal(ovfProperty(xml, "b"), undefined);
    assert.throws(() => ovfProperty("<html/>", "a"), MetadataError);
  });
});
