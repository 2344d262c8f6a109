import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { oracle } from "../../../../agent/src/machined/platforms/oracle.js";
import { fixtureYaml, platformIo, ServedHttp } from "./helpers.js";

describe("oracle", () => {
  it("reads /opc/v2/instance/ and /opc/v2/vnics/ with Authorization: Bearer Oracle: DHCPv6 and the IPv6 router per VNIC, the service as DNS and NTP", async () => {
    const http = new ServedHttp({ platform: "oracle" });
    const config = await oracle.readNetwork(platformIo(http));
    assert.deepEqual(
      http.sent.map((s) => `${s.url} ${s.headers["Authorization"]}`),
      ["http://169.254.169.254/opc/v2/instance/ Bearer Oracle", "http://169.254.169.254/opc/v2/vnics/ Bearer Oracle"],
    );
    assert.deepEqual(config, fixtureYaml("oracle/expected.yaml"));
  });

  it("decodes the base64 user_data; none, or one that is not base64, is no configuration", async () => {
    assert.equal(
      (
        await oracle.readUserData(platformIo(new ServedHttp({ platform: "oracle", userData: "version: v1alpha1\n" })))
      )?.toString(),
      "version: v1alpha1\n",
    );
    assert.equal(await oracle.readUserData(platformIo(new ServedHttp({ platform: "oracle" }))), undefined);
    const notBase64 = new ServedHttp({ platform: "oracle" });
    notBase64.request = async () => ({ status: 200, body: Buffer.from("version: v1alpha1") });
    assert.equal(await oracle.readUserData(platformIo(notBase64)), undefined);
  });
});
