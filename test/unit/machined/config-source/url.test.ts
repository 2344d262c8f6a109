import assert from "node:assert/strict";
import { test } from "node:test";
import { substituteConfigUrl, urlVariablesUsed } from "../../../../agent/src/machined/config-source/url.js";

const values = {
  uuid: "0000-0000",
  serial: "12345",
  mac: "12:34:56:78:90:ab",
  hostname: "example-node",
  code: "top-secret",
};

test("query variables are replaced and the query re-encoded with sorted keys, as Talos's url tests expect", () => {
  assert.equal(substituteConfigUrl("https://example.com?foo=bar", values), "https://example.com?foo=bar");
  assert.equal(substituteConfigUrl("https://example.com?uuid=", values), "https://example.com?uuid=0000-0000");
  assert.equal(
    substituteConfigUrl("https://example.com?uuid=${uuid}&no=${serial}", values),
    "https://example.com?no=12345&uuid=0000-0000",
  );
  assert.equal(
    substituteConfigUrl("https://example.com?uuid=${uuid}&mac=${mac}&hostname=${hostname}&code=${code}", values),
    "https://example.com?code=top-secret&hostname=example-node&mac=12%3A34%3A56%3A78%3A90%3Aab&uuid=0000-0000",
  );
});

test("variables in the path are replaced (escaped), case-insensitively; a query without variables is left as written", () => {
  assert.equal(substituteConfigUrl("http://10.0.2.2:8080/${uuid}", values), "http://10.0.2.2:8080/0000-0000");
  assert.equal(
    substituteConfigUrl("http://h/configs/${MAC}/${Hostname}.yaml?z=1&a=2", values),
    "http://h/configs/12%3A34%3A56%3A78%3A90%3Aab/example-node.yaml?z=1&a=2",
  );
  assert.equal(substituteConfigUrl("http://h/${code}", { code: "a b/c" }), "http://h/a%20b%2Fc");
  assert.equal(substituteConfigUrl("http://h/${serial}", {}), "http://h/");
});

test("the variables a URL uses, in Talos's order", () => {
  assert.deepEqual(urlVariablesUsed("http://h/${mac}?u=${UUID}"), ["uuid", "mac"]);
  assert.deepEqual(urlVariablesUsed("http://h/?uuid="), ["uuid"]);
  assert.deepEqual(urlVariablesUsed("http://h/?uuid=given"), []);
  assert.deepEqual(urlVariablesUsed("http://h/config.yaml"), []);
});
