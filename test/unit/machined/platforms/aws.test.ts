import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { aws, awsEndpoint, fetchAwsMetadata, parseAwsMetadata } from "../../../../agent/src/machined/platforms/aws.js";
import { MetadataError, MetadataUnreachableError } from "../../../../agent/src/machined/platforms/metadata-http.js";
import { fixtureText, fixtureYaml, platformIo, reply, ScriptedHttp, type Answer } from "./helpers.js";

const metaData = JSON.parse(fixtureText("aws/meta-data.json")) as Record<string, string>;
const token = "AQAEAOpaque-session-token==";

/** IMDS as documented: the token API, then each key with the token; without it, 401. */
function imds(keys: Record<string, string>, opts: { userData?: string; tokenApi?: number } = {}): ScriptedHttp {
  const answers = new Map<string, Answer>();
  answers.set(`PUT ${awsEndpoint}/latest/api/token`, opts.tokenApi ? reply(opts.tokenApi) : reply(200, token));
  const withToken =
    (body: string): Answer =>
    (req) =>
      opts.tokenApi || req.headers["X-aws-ec2-metadata-token"] === token ? reply(200, body) : reply(401);
  for (const [k, v] of Object.entries(keys)) answers.set(`GET ${awsEndpoint}/latest/meta-data/${k}`, withToken(v));
  if (opts.userData !== undefined) answers.set(`GET ${awsEndpoint}/latest/user-data`, withToken(opts.userData));
  return new ScriptedHttp(answers);
}

describe("aws", () => {
  it("reads IMDS with a v2 session token: one PUT with the token's lifetime, then every key with the token", async () => {
    const http = imds(metaData);
    const m = await fetchAwsMetadata(http);
    assert.deepEqual(http.sent[0], {
      method: "PUT",
      url: `${awsEndpoint}/latest/api/token`,
      headers: { "X-aws-ec2-metadata-token-ttl-seconds": "300" },
    });
    assert.deepEqual(
      http.sent.slice(1).map((s) => s.url.replace(`${awsEndpoint}/latest/meta-data/`, "")),
      [
        "hostname",
        "instance-type",
        "instance-life-cycle",
        "instance-id",
        "public-ipv4",
        "ipv6",
        "placement/region",
        "placement/availability-zone",
      ],
    );
    assert.ok(http.sent.slice(1).every((s) => s.method === "GET" && s.headers["X-aws-ec2-metadata-token"] === token));
    assert.equal(http.sent.filter((s) => s.method === "PUT").length, 1, "one token for the whole read");
    assert.equal(m.instanceId, "i-0f1e2d3c4b5a69788");
  });

  it("turns the metadata into the hostname, the public addresses as external IPs and PlatformMetadata (spot, provider id)", async () => {
    assert.deepEqual(parseAwsMetadata(await fetchAwsMetadata(imds(metaData))), fixtureYaml("aws/expected.yaml"));
  });

  it("leaves out what the instance has not got (404 keys): no hostname, no external IP, not spot", async () => {
    const config = parseAwsMetadata(
      await fetchAwsMetadata(
        imds({
          "instance-id": "i-1",
          "placement/availability-zone": "us-east-1a",
          "placement/region": "us-east-1",
          "instance-life-cycle": "on-demand",
        }),
      ),
    );
    assert.deepEqual(config.hostnames, []);
    assert.deepEqual(config.externalIPs, []);
    assert.deepEqual(config.metadata, {
      platform: "aws",
      region: "us-east-1",
      zone: "us-east-1a",
      instanceId: "i-1",
      providerId: "aws:///us-east-1a/i-1",
    });
  });

  it("falls back to IMDSv1 where the token API is refused (403, 404, 405)", async () => {
    for (const status of [403, 404, 405]) {
      const http = imds(metaData, { tokenApi: status, userData: "machine: {}" });
      assert.equal((await fetchAwsMetadata(http)).zone, "eu-west-1b");
      assert.ok(http.sent.slice(1).every((s) => s.headers["X-aws-ec2-metadata-token"] === undefined));
    }
  });

  it("takes a new token once when one is refused (401), as an expired one is", async () => {
    let tokens = 0;
    const answers = new Map<string, Answer>([
      [`PUT ${awsEndpoint}/latest/api/token`, () => reply(200, `t${++tokens}`)],
      [
        `GET ${awsEndpoint}/latest/user-data`,
        (req) => (req.headers["X-aws-ec2-metadata-token"] === "t2" ? reply(200, "version: v1alpha1") : reply(401)),
      ],
    ]);
    const http = new ScriptedHttp(answers);
    assert.equal((await aws.readUserData(platformIo(http)))?.toString(), "version: v1alpha1");
    assert.equal(tokens, 2);
  });

  it("has no user data on a 404 or an empty or blank answer", async () => {
    assert.equal(await aws.readUserData(platformIo(imds({}))), undefined);
    assert.equal(await aws.readUserData(platformIo(imds({}, { userData: " \n" }))), undefined);
  });

  it("says a 5xx or the token API's 5xx is unreachable (retried), a 400 is an error", async () => {
    const down = new ScriptedHttp(new Map([[`PUT ${awsEndpoint}/latest/api/token`, reply(503, "starting")]]));
    await assert.rejects(fetchAwsMetadata(down), MetadataUnreachableError);
    const answers = new Map<string, Answer>([
      [`PUT ${awsEndpoint}/latest/api/token`, reply(200, token)],
      [`GET ${awsEndpoint}/latest/meta-data/hostname`, reply(500, "oops")],
    ]);
    await assert.rejects(fetchAwsMetadata(new ScriptedHttp(answers)), MetadataUnreachableError);
    const bad = new ScriptedHttp(new Map([[`PUT ${awsEndpoint}/latest/api/token`, reply(400, "missing ttl")]]));
    await assert.rejects(fetchAwsMetadata(bad), MetadataError);
  });

  it("refuses a hostname that is not one (bad metadata)", () => {
    const none = {
      hostname: "",
      instanceType: "",
      instanceLifeCycle: "",
      instanceId: "",
      publicIPv4: "",
      publicIPv6: "",
      region: "",
      zone: "",
    };
    assert.throws(() => parseAwsMetadata({ ...none, hostname: ".example.com" }), /hostname: empty/);
  });
});
