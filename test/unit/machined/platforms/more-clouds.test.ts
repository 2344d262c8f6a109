import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import { akamai, parseAkamaiMetadata } from "../../../../agent/src/machined/platforms/akamai.js";
import { detectPlatform, parseCmdline } from "../../../../agent/src/machined/platform.js";
import { equinixMetal, parseEquinixMetalMetadata } from "../../../../agent/src/machined/platforms/equinixmetal.js";
import { cloudPlatform } from "../../../../agent/src/machined/platforms/index.js";
import { exoscale } from "../../../../agent/src/machined/platforms/exoscale.js";
import {
  fetchMetadataHttp,
  MetadataError,
  type MetadataHttp,
} from "../../../../agent/src/machined/platforms/metadata-http.js";
import { parseScalewayMetadata, scaleway } from "../../../../agent/src/machined/platforms/scaleway.js";
import { parseUpcloudMetadata, upcloud } from "../../../../agent/src/machined/platforms/upcloud.js";
import { PlatformDataError, withLinksByMac } from "../../../../agent/src/network/platform-config.js";
import { fixtureText, fixtureYaml, link, platformIo, ServedHttp } from "./helpers.js";

const fixtureJson = (relative: string): Record<string, unknown> =>
  JSON.parse(fixtureText(relative)) as Record<string, unknown>;

async function userDataOf(platform: string, read: typeof scaleway.readUserData, userData?: string) {
  return (
    await read(platformIo(new ServedHttp({ platform, ...(userData !== undefined ? { userData } : {}) })))
  )?.toString();
}

describe("scaleway", () => {
  it("reads /conf?format=json: DHCPv4 and the link route to 169.254.42.42 on eth0, the IPv6 with its gateway (metric 2048), external IPs, region from the zone", async () => {
    const http = new ServedHttp({ platform: "scaleway" });
    const config = await scaleway.readNetwork(platformIo(http));
    assert.deepEqual(
      http.sent.map((s) => s.url),
      ["http://169.254.42.42/conf?format=json"],
    );
    assert.deepEqual(config, fixtureYaml("scaleway/expected.yaml"));
  });

  it("takes /user_data/cloud-init, asked from a privileged port, as the configuration; none is no configuration", async () => {
    assert.equal(await userDataOf("scaleway", scaleway.readUserData, "version: v1alpha1"), "version: v1alpha1");
    assert.equal(await userDataOf("scaleway", scaleway.readUserData), undefined);
    assert.equal(await userDataOf("scaleway", scaleway.readUserData, "  \n"), undefined);
  });

  it("a privileged request leaves from a port of 100..611 over a fresh connection", async () => {
    const ports: number[] = [];
    const server = http.createServer((req, res) => {
      ports.push(req.socket.remotePort ?? 0);
      res.end("version: v1alpha1");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const ac = new AbortController();
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/user_data/cloud-init`;
      const metadataHttp = fetchMetadataHttp(ac.signal);
      for (let i = 0; i < 3; i++) {
        const reply = await metadataHttp.request(url, { lowSourcePort: true });
        assert.deepEqual([reply.status, reply.body.toString()], [200, "version: v1alpha1"]);
      }
      assert.equal(ports.length, 3);
      assert.ok(
        ports.every((p) => p >= 100 && p < 612),
        `source ports ${ports.join(", ")}`,
      );
    } finally {
      ac.abort();
      server.close();
    }
  });

  it("refuses an IPv6 netmask that is not a length, and an IPv6 without a gateway", () => {
    const doc = fixtureJson("scaleway/conf.json");
    assert.throws(
      () =>
        parseScalewayMetadata({ ...doc, ipv6: { address: "2001:db8::1", gateway: "2001:db8::", netmask: "ffff::" } }),
      PlatformDataError,
    );
    assert.throws(
      () => parseScalewayMetadata({ ...doc, ipv6: { address: "2001:db8::1", netmask: "64" } }),
      /ipv6 gateway: not an IP address: ""/,
    );
  });
});

describe("upcloud", () => {
  it("reads /metadata/v1.json: eth<index-1>, DHCPv4 for a DHCP IPv4, static addresses with a route to their network, every DNS server, the first address and static IPv6 as external IPs", async () => {
    const http = new ServedHttp({ platform: "upcloud" });
    const config = await upcloud.readNetwork(platformIo(http));
    assert.deepEqual(
      http.sent.map((s) => s.url),
      ["http://169.254.169.254/metadata/v1.json"],
    );
    assert.deepEqual(config, fixtureYaml("upcloud/expected.yaml"));
  });

  it("passes over an interface of index 0 and takes the zone from region", () => {
    const config = parseUpcloudMetadata({
      instance_id: "0012",
      region: "fi-hel2",
      network: { interfaces: [{ index: 0, ip_addresses: [{ address: "10.0.0.1", dhcp: true, family: "IPv4" }] }] },
    });
    assert.deepEqual([config.links, config.operators, config.externalIPs], [[], [], []]);
    assert.deepEqual(config.metadata, {
      platform: "upcloud",
      zone: "fi-hel2",
      instanceId: "0012",
      providerId: "upcloud://0012",
    });
  });

  it("takes /metadata/v1/user_data as the configuration; none is no configuration", async () => {
    assert.equal(await userDataOf("upcloud", upcloud.readUserData, "version: v1alpha1"), "version: v1alpha1");
    assert.equal(await userDataOf("upcloud", upcloud.readUserData), undefined);
  });
});

describe("exoscale", () => {
  it("reads each key under /1.0/meta-data/ (one it lacks is empty): hostname, instance type from the service offering, the public IPv4; no network settings", async () => {
    const http = new ServedHttp({ platform: "exoscale" });
    const config = await exoscale.readNetwork(platformIo(http));
    assert.deepEqual(
      http.sent.map((s) => s.url.replace("http://169.254.169.254/1.0/meta-data/", "")),
      ["local-hostname", "service-offering", "instance-id", "public-ipv4", "availability-zone"],
    );
    assert.deepEqual(config, fixtureYaml("exoscale/expected.yaml"));
  });

  it("takes /1.0/user-data as the configuration; none is no configuration", async () => {
    assert.equal(await userDataOf("exoscale", exoscale.readUserData, "version: v1alpha1"), "version: v1alpha1");
    assert.equal(await userDataOf("exoscale", exoscale.readUserData), undefined);
  });

  it("a key the service fails on fails the read", async () => {
    await assert.rejects(
      exoscale.readNetwork(platformIo(new ServedHttp({ platform: "exoscale", fault: { status: 403 } }))),
      MetadataError,
    );
  });
});

describe("akamai", () => {
  it("reads /v1/instance and /v1/network under a token: the IPv4 and IPv6 ranges on eth0, the link-local address and its route, external IPs, the label as hostname", async () => {
    const http = new ServedHttp({ platform: "akamai" });
    const config = await akamai.readNetwork(platformIo(http));
    assert.deepEqual(
      http.sent.map((s) => `${s.method} ${s.url}`),
      [
        "PUT http://169.254.169.254/v1/token",
        "GET http://169.254.169.254/v1/instance",
        "GET http://169.254.169.254/v1/network",
      ],
    );
    assert.equal(http.sent[0]!.headers["Metadata-Token-Expiry-Seconds"], "3600");
    const token = http.sent[1]!.headers["Metadata-Token"] ?? "";
    assert.match(token, /^linode-token-\d+$/);
    assert.ok(http.sent.slice(1).every((s) => s.headers["Metadata-Token"] === token));
    assert.deepEqual(config, fixtureYaml("akamai/expected.yaml"));
  });

  it("takes /v1/user-data, base64, as the configuration; none is no configuration", async () => {
    assert.equal(await userDataOf("akamai", akamai.readUserData, "version: v1alpha1"), "version: v1alpha1");
    assert.equal(await userDataOf("akamai", akamai.readUserData), undefined);
    assert.equal(await userDataOf("akamai", akamai.readUserData, ""), undefined);
  });

  it("refuses a network without a link-local address, and user data that is not base64", async () => {
    const network = fixtureJson("akamai/network.json");
    assert.throws(
      () => parseAkamaiMetadata(fixtureJson("akamai/instance.json"), { ...network, ipv6: {} }),
      /no link_local address/,
    );
    const served = new ServedHttp({ platform: "akamai" });
    const notBase64: MetadataHttp = {
      request: async (url, req) =>
        url.endsWith("/user-data") ? { status: 200, body: Buffer.from("version: v1alpha1") } : served.request(url, req),
    };
    await assert.rejects(akamai.readUserData(platformIo(notBase64)), /user-data: not base64/);
  });
});

describe("equinixMetal", () => {
  it("reads /metadata: the bond's members by MAC, the bond (802.3ad, layer3+4), management addresses on it, default routes through the public gateways, private subnets and IPv4 BGP peers through the private one", async () => {
    const http = new ServedHttp({ platform: "equinixMetal" });
    const config = await equinixMetal.readNetwork(platformIo(http));
    assert.deepEqual(
      http.sent.map((s) => s.url),
      ["https://metadata.platformequinix.com/metadata"],
    );
    assert.deepEqual(config, fixtureYaml("equinix-metal/expected.yaml"));
    // As Talos names them on a host whose links with these permanent MACs are eth1 and eth2.
    const onHost = withLinksByMac(config, [link("eth1", "68:05:ca:b8:f1:f8"), link("eth2", "68:05:ca:b8:f1:f9")]);
    assert.deepEqual(
      onHost.links.map((l) => [l.name, l.masterName ?? "", l.slaveIndex ?? 0]),
      [
        ["eth1", "bond0", 0],
        ["eth2", "bond0", 1],
        ["bond0", "", 0],
      ],
    );
  });

  it("takes /userdata as the configuration; none is no configuration", async () => {
    assert.equal(await userDataOf("equinixMetal", equinixMetal.readUserData, "version: v1alpha1"), "version: v1alpha1");
    assert.equal(await userDataOf("equinixMetal", equinixMetal.readUserData), undefined);
  });

  it("is a metal-mode platform, also by its old name packet", () => {
    assert.deepEqual(detectPlatform(parseCmdline("talos.platform=equinixMetal"), {}), {
      name: "equinixMetal",
      mode: "metal",
    });
    assert.deepEqual(detectPlatform(parseCmdline("talos.platform=packet"), {}), { name: "packet", mode: "metal" });
    assert.equal(cloudPlatform("packet"), equinixMetal);
  });

  it("refuses a bonding mode that is none", () => {
    const doc = fixtureJson("equinix-metal/metadata.json");
    const network = doc["network"] as Record<string, unknown>;
    assert.throws(
      () => parseEquinixMetalMetadata({ ...doc, network: { ...network, bonding: { mode: 9 } } }),
      /bonding mode 9 is not a bond mode/,
    );
  });
});
