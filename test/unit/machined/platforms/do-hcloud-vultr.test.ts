import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { digitalOcean, parseDigitalOceanMetadata } from "../../../../agent/src/machined/platforms/digitalocean.js";
import { hcloud, parseHcloud } from "../../../../agent/src/machined/platforms/hcloud.js";
import { MetadataError } from "../../../../agent/src/machined/platforms/metadata-http.js";
import { parseVultrMetadata, vultr } from "../../../../agent/src/machined/platforms/vultr.js";
import { fixtureText, fixtureYaml, platformIo, ServedHttp } from "./helpers.js";

describe("digital-ocean", () => {
  it("reads /metadata/v1.json: public eth0 with IPv4, IPv6 and the anchor address, the route to the metadata service, private eth1, DNS, PlatformMetadata", async () => {
    const http = new ServedHttp({ platform: "digital-ocean" });
    const config = await digitalOcean.readNetwork(platformIo(http));
    assert.deepEqual(
      http.sent.map((s) => s.url),
      ["http://169.254.169.254/metadata/v1.json"],
    );
    assert.deepEqual(config, fixtureYaml("digital-ocean/expected.yaml"));
    assert.deepEqual(config, parseDigitalOceanMetadata(JSON.parse(fixtureText("digital-ocean/v1.json"))));
  });

  it("takes /metadata/v1/user-data as the configuration; none is no configuration", async () => {
    assert.equal(
      (
        await digitalOcean.readUserData(
          platformIo(new ServedHttp({ platform: "digital-ocean", userData: "version: v1alpha1" })),
        )
      )?.toString(),
      "version: v1alpha1",
    );
    assert.equal(await digitalOcean.readUserData(platformIo(new ServedHttp({ platform: "digital-ocean" }))), undefined);
  });

  it("refuses a netmask that is none, a prefix too long for IPv4, and malformed JSON", async () => {
    assert.throws(
      () =>
        parseDigitalOceanMetadata({
          interfaces: { public: [{ ipv4: { ip_address: "10.0.0.1", netmask: "255.255.0" } }] },
        }),
      /interfaces\.public\[0\]\.ipv4 netmask: not an IP address: "255\.255\.0"/,
    );
    assert.throws(
      () =>
        parseDigitalOceanMetadata({ interfaces: { public: [{ ipv4: { ip_address: "10.0.0.1", netmask: "40" } }] } }),
      /netmask "40" is not of the address's family/,
    );
    await assert.rejects(
      digitalOcean.readNetwork(
        platformIo(new ServedHttp({ platform: "digital-ocean", fault: { body: '{"droplet_id": ' } })),
      ),
      MetadataError,
    );
  });
});

describe("hcloud", () => {
  it("reads each metadata key and network-config (cloud-init v1): DHCPv4, the static IPv6 with its gateway, external IPs, region from the zone", async () => {
    const http = new ServedHttp({ platform: "hcloud" });
    const config = await hcloud.readNetwork(platformIo(http));
    assert.deepEqual(
      http.sent.map((s) => s.url.replace("http://169.254.169.254/hetzner/v1/", "")),
      [
        "metadata/hostname",
        "metadata/instance-id",
        "metadata/availability-zone",
        "metadata/public-ipv4",
        "metadata/network-config",
      ],
    );
    assert.deepEqual(config, fixtureYaml("hcloud/expected.yaml"));
  });

  it("takes /hetzner/v1/userdata as the configuration; none is no configuration", async () => {
    assert.equal(
      (
        await hcloud.readUserData(platformIo(new ServedHttp({ platform: "hcloud", userData: "version: v1alpha1" })))
      )?.toString(),
      "version: v1alpha1",
    );
    assert.equal(await hcloud.readUserData(platformIo(new ServedHttp({ platform: "hcloud" }))), undefined);
  });

  it("refuses a network-config of another version, or malformed", async () => {
    assert.throws(
      () =>
        parseHcloud(
          { version: 2, ethernets: {} },
          { hostname: "", instanceId: "", availabilityZone: "", publicIPv4: "" },
        ),
      /network-config metadata version=2 is not supported/,
    );
    await assert.rejects(
      hcloud.readNetwork(platformIo(new ServedHttp({ platform: "hcloud", fault: { body: "config: [\n  - {" } }))),
      /malformed YAML/,
    );
  });
});

describe("vultr", () => {
  it("reads /v1.json: eth<N> with the IPv4 and gateway (priority 0, as Talos), DHCPv4 where there is none, MTU 1450 on a private network, public external IPs", async () => {
    const config = await vultr.readNetwork(platformIo(new ServedHttp({ platform: "vultr" })));
    assert.deepEqual(config, fixtureYaml("vultr/expected.yaml"));
    assert.deepEqual(config, parseVultrMetadata(JSON.parse(fixtureText("vultr/v1.json"))));
  });

  it("takes /latest/user-data as the configuration; none is no configuration", async () => {
    assert.equal(
      (
        await vultr.readUserData(platformIo(new ServedHttp({ platform: "vultr", userData: "version: v1alpha1" })))
      )?.toString(),
      "version: v1alpha1",
    );
    assert.equal(await vultr.readUserData(platformIo(new ServedHttp({ platform: "vultr" }))), undefined);
  });
});
