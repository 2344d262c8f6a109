import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  openstack,
  openstackEndpoint,
  parseOpenstack,
  parseOpenstackMetadata,
} from "../../../../agent/src/machined/platforms/openstack.js";
import { MetadataError } from "../../../../agent/src/machined/platforms/metadata-http.js";
import { withLinksByMac } from "../../../../agent/src/network/platform-config.js";
import { fixtureText, fixtureYaml, link, platformIo, ServedHttp } from "./helpers.js";

const nodeLinks = [link("ens3", "FA:16:3E:5A:21:0B"), link("lo", "00:00:00:00:00:00")];
const configDrive = (userData?: string) =>
  new Map([
    [
      "config-2",
      new Map([
        ["openstack/latest/meta_data.json", Buffer.from(fixtureText("openstack/meta_data.json"))],
        ["openstack/latest/network_data.json", Buffer.from(fixtureText("openstack/network_data.json"))],
        ...(userData !== undefined ? [["openstack/latest/user_data", Buffer.from(userData)] as [string, Buffer]] : []),
      ]),
    ],
  ]);

describe("openstack", () => {
  it("turns meta_data.json and network_data.json into links by MAC, static addresses, gateway and extra routes, DHCP, DNS and PlatformMetadata", () => {
    const meta = parseOpenstackMetadata(JSON.parse(fixtureText("openstack/meta_data.json")));
    const config = parseOpenstack(meta, JSON.parse(fixtureText("openstack/network_data.json")), []);
    assert.deepEqual(config, fixtureYaml("openstack/expected.yaml"));
    // The node's link with the first MAC is ens3: the specs follow it; the second MAC is no link of the node's.
    const onNode = withLinksByMac(config, nodeLinks);
    assert.deepEqual(
      onNode.links.map((l) => l.name),
      ["ens3", "eth1"],
    );
    assert.deepEqual(
      [...onNode.addresses, ...onNode.routes.map((r) => ({ linkName: r.outLinkName }))].map((a) => a.linkName),
      ["ens3", "ens3", "ens3", "ens3", "ens3"],
    );
    assert.deepEqual(
      onNode.operators.map((o) => o.linkName),
      ["eth1"],
    );
  });

  it("reads the config drive first: its user data and network, no request to the metadata service", async () => {
    const http = new ServedHttp({ platform: "openstack", userData: "from the service" });
    const io = platformIo(http, configDrive("version: v1alpha1\n"));
    assert.equal((await openstack.readUserData(io))?.toString(), "version: v1alpha1\n");
    const config = await openstack.readNetwork(io);
    assert.equal(config.metadata?.instanceType, undefined);
    assert.deepEqual(config.externalIPs, []);
    assert.deepEqual(http.sent, []);
  });

  it("without a config drive (or one without user_data, as Talos) reads the metadata service: documents, public IPv4 and instance type", async () => {
    for (const volumes of [new Map(), configDrive()]) {
      const http = new ServedHttp({ platform: "openstack", userData: "version: v1alpha1\n" });
      const io = platformIo(http, volumes);
      assert.equal((await openstack.readUserData(io))?.toString(), "version: v1alpha1\n");
      const config = await openstack.readNetwork(io);
      assert.deepEqual(config.externalIPs, ["198.51.100.20"]);
      assert.equal(config.metadata?.instanceType, "m1.large");
      assert.deepEqual(
        http.sent.slice(3).map((s) => s.url.replace(openstackEndpoint, "")),
        [
          "openstack/latest/meta_data.json",
          "openstack/latest/network_data.json",
          "openstack/latest/user_data",
          "latest/meta-data/public-ipv4",
          "latest/meta-data/instance-type",
        ],
      );
    }
  });

  it("takes user data that is cloud-config, or none, as no configuration", async () => {
    assert.equal(
      await openstack.readUserData(
        platformIo(new ServedHttp({ platform: "openstack", userData: "#cloud-config\nusers: []\n" })),
      ),
      undefined,
    );
    assert.equal(await openstack.readUserData(platformIo(new ServedHttp({ platform: "openstack" }))), undefined);
  });

  it("makes bonds bond<N> of their member links, with Talos's bond settings", () => {
    const network = {
      links: [
        {
          id: "b0",
          type: "bond",
          mtu: 9000,
          bond_mode: "802.3ad",
          bond_links: ["p0", "p1"],
          bond_miimon: "100",
          bond_xmit_hash_policy: "layer3+4",
          ethernet_mac_address: "4c:d9:8f:00:00:01",
        },
        { id: "p0", type: "phy", ethernet_mac_address: "4c:d9:8f:00:00:01" },
        { id: "p1", type: "phy", ethernet_mac_address: "4c:d9:8f:00:00:02" },
      ],
      networks: [{ id: "n0", type: "ipv4", link: "b0", ip_address: "192.0.2.10/24", gateway: "192.0.2.1" }],
    };
    const config = withLinksByMac(parseOpenstack(parseOpenstackMetadata({ uuid: "u1" }), network, []), [
      link("enp1s0f0", "4c:d9:8f:00:00:01"),
    ]);
    assert.deepEqual(
      config.links.map((l) => [l.name, l.kind, l.masterName, l.slaveIndex, l.mtu]),
      [
        ["bond0", "bond", undefined, undefined, 9000],
        ["enp1s0f0", "", "bond0", 0, 0],
        ["eth2", "", "bond0", 1, 0],
      ],
    );
    assert.deepEqual(config.links[0]!.bondMaster, {
      mode: "802.3ad",
      xmitHashPolicy: "layer3+4",
      lacpRate: "fast",
      arpValidate: "none",
      arpAllTargets: "any",
      primaryReselect: "always",
      failOverMac: "none",
      miimon: 100,
      updelay: 200,
      downdelay: 200,
      resendIgmp: 1,
      lpInterval: 1,
      packetsPerSlave: 1,
      numPeerNotif: 1,
      tlbLogicalLb: 1,
      adActorSysPrio: 65535,
    });
    assert.deepEqual(
      config.addresses.map((a) => `${a.linkName} ${a.address}`),
      ["bond0 192.0.2.10/24"],
    );
    assert.throws(
      () =>
        parseOpenstack(parseOpenstackMetadata({}), { links: [{ id: "b", type: "bond", bond_mode: "fastest" }] }, []),
      /invalid bond_mode "fastest"/,
    );
  });

  it("says where network_data.json is wrong: malformed JSON, an address that is none", async () => {
    await assert.rejects(
      openstack.readNetwork(platformIo(new ServedHttp({ platform: "openstack", fault: { body: '{"links": [' } }))),
      (err: unknown) =>
        (err instanceof MetadataError && /network_data\.json: malformed JSON/.test(err.message)) ||
        /meta_data\.json: malformed JSON/.test(String(err)),
    );
    assert.throws(
      () =>
        parseOpenstack(
          parseOpenstackMetadata({}),
          {
            links: [{ id: "l", type: "phy" }],
            networks: [{ id: "n", type: "ipv4", link: "l", ip_address: "10.0.0.300" }],
          },
          [],
        ),
      /network n: not an IP address: "10\.0\.0\.300"/,
    );
  });
});
