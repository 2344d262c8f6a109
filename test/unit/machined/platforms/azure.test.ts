import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { azure, healthReport, ovfCustomData, parseAzure } from "../../../../agent/src/machined/platforms/azure.js";
import { MetadataError } from "../../../../agent/src/machined/platforms/metadata-http.js";
import { fixtureText, fixtureYaml, platformIo, ServedHttp } from "./helpers.js";

const ovfEnv = (customData: string) => fixtureText("azure/ovf-env.xml.in").replace("@CUSTOM_DATA@", customData);
const cd = (xml: string) => new Map([["sr0", new Map([["ovf-env.xml", Buffer.from(xml)]])]]);

describe("azure", () => {
  it("asks IMDS with Metadata: true for compute, interfaces and the load balancer, api-version 2021-12-13", async () => {
    const http = new ServedHttp({ platform: "azure" });
    const config = await azure.readNetwork(platformIo(http));
    assert.ok(http.sent.every((s) => s.headers["Metadata"] === "true"));
    assert.deepEqual(
      http.sent.map((s) => s.url),
      [
        "http://169.254.169.254/metadata/instance/compute?api-version=2021-12-13&format=json",
        "http://169.254.169.254/metadata/instance/network/interface?api-version=2021-12-13&format=json",
        "http://169.254.169.254/metadata/loadbalancer?api-version=2021-12-13&format=json",
      ],
    );
    assert.deepEqual(config, fixtureYaml("azure/expected.yaml"));
  });

  it("falls back to api-version 2019-06-01 where the newer one is refused", async () => {
    const http = new ServedHttp({ platform: "azure", apiVersions: ["2019-06-01"] });
    const config = await azure.readNetwork(platformIo(http));
    assert.deepEqual(
      http.sent.map((s) => new URL(s.url).searchParams.get("api-version")),
      ["2021-12-13", "2019-06-01", "2019-06-01", "2019-06-01"],
    );
    assert.equal(config.metadata?.zone, "westeurope-2");
  });

  it("takes the zone from the fault domain without an availability zone, and no spot without an eviction policy", () => {
    const compute = {
      location: "NorthEurope",
      platformFaultDomain: "1",
      vmSize: "Standard_B2s",
      resourceId: "/r/1",
      osProfile: { computerName: "n" },
    };
    const config = parseAzure({ compute, interfaces: [] });
    assert.deepEqual(config.metadata, {
      platform: "azure",
      hostname: "n",
      region: "northeurope",
      zone: "1",
      instanceType: "Standard_B2s",
      instanceId: "/r/1",
      providerId: "azure:///r/1",
    });
  });

  it("reads the configuration from ovf-env.xml's base64 CustomData on the provisioning CD", async () => {
    const io = platformIo(
      new ServedHttp({ platform: "azure" }),
      new Map(),
      cd(ovfEnv(Buffer.from("version: v1alpha1\n").toString("base64"))),
    );
    assert.equal((await azure.readUserData(io))?.toString(), "version: v1alpha1\n");
    assert.equal(
      await azure.readUserData(platformIo(new ServedHttp({ platform: "azure" }), new Map(), cd(ovfEnv("")))),
      undefined,
    );
    assert.equal(
      await azure.readUserData(platformIo(new ServedHttp({ platform: "azure" }))),
      undefined,
      "no CD: no configuration",
    );
    assert.throws(() => ovfCustomData(ovfEnv("not*base64!")), /CustomData is not base64/);
    assert.throws(() => ovfCustomData("<html></html>"), MetadataError);
  });

  it("then reports Ready to the wire server: the goal state, then the health report naming its incarnation, container and instance", async () => {
    const http = new ServedHttp({ platform: "azure" });
    await azure.afterUserData!(platformIo(http));
    assert.deepEqual(
      http.sent.map((s) => `${s.method} ${s.url}`),
      ["GET http://168.63.129.16/machine/?comp=goalstate", "POST http://168.63.129.16/machine/?comp=health"],
    );
    assert.ok(
      http.sent.every(
        (s) =>
          s.headers["x-ms-agent-name"] === "WALinuxAgent" &&
          s.headers["x-ms-version"] === "2015-04-05" &&
          s.headers["Content-Type"] === "text/xml;charset=utf-8",
      ),
    );
    assert.equal(
      http.sent[1]!.body,
      '<?xml version="1.0" encoding="UTF-8"?>\n<Health xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><GoalStateIncarnation>1</GoalStateIncarnation><Container><ContainerId>4b2c8f3e-1d0a-4e6b-9c5f-7a8b9c0d1e2f</ContainerId><RoleInstanceList><Role><InstanceId>0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0._node-f</InstanceId><Health><State>Ready</State></Health></Role></RoleInstanceList></Container></Health>',
    );
    assert.throws(() => healthReport("<GoalState></GoalState>"), /goal state: no Incarnation/);
  });
});
