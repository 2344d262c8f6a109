import assert from "node:assert/strict";
import { test } from "node:test";
import { renderHosts, renderResolvConf } from "../../../agent/src/controllers/network/etc-files.js";

test("resolv.conf: at most three nameservers, the search domain after a blank line", () => {
  assert.equal(renderResolvConf(["10.0.0.53", "1.1.1.1", "8.8.8.8", "9.9.9.9"], "lab.test"), "nameserver 10.0.0.53\nnameserver 1.1.1.1\nnameserver 8.8.8.8\n\nsearch lab.test\n");
  assert.equal(renderResolvConf(["1.1.1.1"], ""), "nameserver 1.1.1.1\n");
});

test("hosts: Talos's layout (first column padded as Go's tabwriter does), FQDN then short name, extra entries", () => {
  assert.equal(
    renderHosts("10.0.2.15", "node-1", "lab.test", [{ ip: "192.168.10.100", aliases: ["registry.lab", "mirror"] }]),
    [
      "127.0.0.1      localhost",
      "10.0.2.15      node-1.lab.test node-1",
      "::1            localhost ip6-localhost ip6-loopback",
      "ff02::1        ip6-allnodes",
      "ff02::2        ip6-allrouters",
      "192.168.10.100 registry.lab mirror",
      "",
    ].join("\n"),
  );
  assert.equal(renderHosts("10.0.2.15", "talos-10-0-2-15", "", []).split("\n")[1], "10.0.2.15 talos-10-0-2-15");
});
