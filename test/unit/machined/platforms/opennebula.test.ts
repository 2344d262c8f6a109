import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { logger } from "../../../../agent/src/log.js";
import { readCloudNetwork, readCloudUserData } from "../../../../agent/src/machined/platforms/cloud-source.js";
import { parseEnvFile } from "../../../../agent/src/machined/platforms/env-file.js";
import { MetadataError } from "../../../../agent/src/machined/platforms/metadata-http.js";
import {
  NoContextError,
  opennebula,
  parseOpennebulaContext,
} from "../../../../agent/src/machined/platforms/opennebula.js";
import { fixtureText, fixtureYaml, platformIo, ScriptedHttp } from "./helpers.js";

/** A node with a context CD (label CONTEXT) holding this context.sh. */
function withContext(contextSh?: string) {
  const volumes = new Map<string, Map<string, Buffer>>();
  if (contextSh !== undefined) volumes.set("CONTEXT", new Map([["context.sh", Buffer.from(contextSh)]]));
  return platformIo(new ScriptedHttp(new Map()), volumes);
}

describe("opennebula", () => {
  it("reads context.sh from the context CD: eth0's static IPv4, its gateway and DNS, the hostname from NAME, VMID", async () => {
    const config = await opennebula.readNetwork(withContext(fixtureText("opennebula/context.sh")));
    assert.deepEqual(config, fixtureYaml("opennebula/expected.yaml"));
  });

  it("a dhcp method is DHCPv4 without asking for a hostname; the hostname is HOSTNAME before SET_HOSTNAME and NAME, its domain DNS_HOSTNAME", () => {
    const config = parseOpennebulaContext(
      parseEnvFile(
        [
          "NETWORK='YES'",
          "ETH1_MAC='02:00:c0:a8:01:5d'",
          "ETH1_METHOD='dhcp'",
          "ETH0_MAC='02:00:c0:a8:01:5c'",
          "ETH0_IP='10.0.0.5'",
          "ETH0_MASK='255.255.0.0'",
          "ETH0_MTU='9000'",
          "HOSTNAME='node-h'",
          "SET_HOSTNAME='other'",
          "NAME='vm-14'",
          "DNS_HOSTNAME='example.org'",
        ].join("\n"),
        "context.sh",
      ),
    );
    assert.deepEqual(config.operators, [
      {
        operator: "dhcp4",
        linkName: "eth1",
        requireUp: true,
        dhcp4: { routeMetric: 1024, skipHostnameRequest: true },
        layer: "platform",
      },
    ]);
    assert.deepEqual(
      config.links.map((l) => [l.name, l.mtu]),
      [["eth0", 9000]],
    );
    assert.deepEqual(
      config.addresses.map((a) => a.address),
      ["10.0.0.5/16"],
    );
    assert.deepEqual([config.routes, config.resolvers], [[], []]);
    assert.deepEqual(config.hostnames, [{ hostname: "node-h", domainname: "example.org", layer: "platform" }]);
  });

  it("without NETWORK=YES the links are left alone", () => {
    const config = parseOpennebulaContext(
      parseEnvFile("ETH0_MAC='02:00:c0:a8:01:5c'\nETH0_IP='10.0.0.5'\nNAME=vm", "x"),
    );
    assert.deepEqual([config.links, config.addresses, config.operators], [[], [], []]);
    assert.deepEqual(config.metadata, { platform: "opennebula", hostname: "vm" });
  });

  it("takes USER_DATA, base64, as the configuration; without it there is none; without a context CD the read fails", async () => {
    const encoded = Buffer.from("version: v1alpha1").toString("base64");
    assert.equal(
      (await opennebula.readUserData(withContext(`NAME='vm'\nUSER_DATA='${encoded}'\n`)))?.toString(),
      "version: v1alpha1",
    );
    assert.equal(await opennebula.readUserData(withContext("NAME='vm'\n")), undefined);
    await assert.rejects(opennebula.readUserData(withContext()), NoContextError);
    await assert.rejects(opennebula.readUserData(withContext("USER_DATA='not base64!'\n")), /USER_DATA is not base64/);
    assert.equal(opennebula.local, true);
  });
});

describe("opennebula at boot", () => {
  it("reads the context CD without waiting for an address (the context may be what gives it)", async () => {
    const encoded = Buffer.from("version: v1alpha1").toString("base64");
    const io = withContext(`${fixtureText("opennebula/context.sh")}USER_DATA="${encoded}"\n`);
    const ac = new AbortController();
    const deps = {
      platform: opennebula,
      io,
      signal: ac.signal,
      // An address never comes.
      networkReady: () => new Promise<void>(() => undefined),
      log: logger("test"),
    };
    assert.equal((await readCloudUserData(deps))?.toString(), "version: v1alpha1");
    let hostname = "";
    await readCloudNetwork(deps, {
      read: (c) => (hostname = c.hostnames[0]?.hostname ?? ""),
      bad: (m) => assert.fail(m),
    });
    assert.equal(hostname, "code-server");
    ac.abort();
  });
});

describe("context.sh as go-envparse reads it", () => {
  it("bare, double- and single-quoted values, escapes, comments, export and spaces around =", () => {
    const env = parseEnvFile(
      [
        "# a comment",
        "",
        "export A=1",
        'B = "two words"',
        "C='it''s'",
        'D="tab\\tand \\"quote\\" \\u00e9 \\ud83d\\ude00"',
        "E=bare value   # a comment",
        "F=",
        "G=#nothing",
      ].join("\r\n"),
      "context.sh",
    );
    assert.deepEqual(Object.fromEntries(env), {
      A: "1",
      B: "two words",
      C: "its",
      D: 'tab\tand "quote" é 😀',
      E: "bare value",
      F: "",
      G: "",
    });
  });

  it("names the line of a line without =, an unmatched quote, a bad key or escape", () => {
    for (const [text, message] of [
      ["A=1\nSSH_KEY", /context\.sh: line 2: missing =/],
      ["A='open", /line 1: unmatched '/],
      ['A="open', /line 1: unmatched "/],
      ["1A=x", /line 1: key must start with \[A-Za-z_\]/],
      ["A-B=x", /line 1: key characters must be/],
      ['A="\\x"', /line 1: invalid escape sequence/],
      ['A="\\ud83d"', /line 1: incomplete Unicode surrogate pair/],
    ] as const) {
      assert.throws(
        () => parseEnvFile(text, "context.sh"),
        (err: unknown) => err instanceof MetadataError && message.test(err.message),
      );
    }
  });
});
