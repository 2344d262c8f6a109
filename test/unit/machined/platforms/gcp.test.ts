import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  fetchGcpInterfaces,
  fetchGcpMetadata,
  gcp,
  gcpEndpoint,
  parseGcpMetadata,
} from "../../../../agent/src/machined/platforms/gcp.js";
import { MetadataError, MetadataUnreachableError } from "../../../../agent/src/machined/platforms/metadata-http.js";
import { fixtureYaml, platformIo, ServedHttp } from "./helpers.js";

describe("gcp", () => {
  it("asks the metadata server with Metadata-Flavor: Google for each instance fact and the interfaces as JSON", async () => {
    const http = new ServedHttp({ platform: "gcp" });
    await gcp.readNetwork(platformIo(http));
    assert.ok(http.sent.every((s) => s.headers["Metadata-Flavor"] === "Google" && s.method === "GET"));
    assert.deepEqual(
      http.sent.map((s) => s.url.replace(gcpEndpoint, "")),
      [
        "project/project-id",
        "instance/name",
        "instance/machine-type",
        "instance/id",
        "instance/hostname",
        "instance/zone",
        "instance/scheduling/preemptible",
        "instance/network-interfaces/?recursive=true&alt=json",
      ],
    );
  });

  it("turns them into eth<N> with DHCPv4 and MTU, IPv6 with its gateway, NAT addresses, resolver, NTP and PlatformMetadata", async () => {
    const http = new ServedHttp({ platform: "gcp" });
    const config = parseGcpMetadata(await fetchGcpMetadata(http), await fetchGcpInterfaces(http));
    assert.deepEqual(config, fixtureYaml("gcp/expected.yaml"));
  });

  it("reads the user-data attribute; none is no configuration", async () => {
    assert.equal(
      (
        await gcp.readUserData(platformIo(new ServedHttp({ platform: "gcp", userData: "version: v1alpha1\n" })))
      )?.toString(),
      "version: v1alpha1\n",
    );
    assert.equal(await gcp.readUserData(platformIo(new ServedHttp({ platform: "gcp" }))), undefined);
  });

  it("says what is wrong with the service's answers: malformed interfaces JSON, a 403, a 503", async () => {
    await assert.rejects(
      gcp.readNetwork(platformIo(new ServedHttp({ platform: "gcp", fault: { body: "[{" } }))),
      (err: unknown) =>
        err instanceof MetadataError && /instance\/network-interfaces.*malformed JSON/.test(err.message),
    );
    await assert.rejects(
      gcp.readNetwork(platformIo(new ServedHttp({ platform: "gcp", fault: { status: 403 } }))),
      MetadataError,
    );
    await assert.rejects(
      gcp.readUserData(platformIo(new ServedHttp({ platform: "gcp", fault: { status: 503 } }))),
      MetadataUnreachableError,
    );
  });
});
