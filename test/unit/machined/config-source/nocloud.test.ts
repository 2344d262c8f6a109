import assert from "node:assert/strict";
import { test } from "node:test";
import { nocloudMetadata, nocloudPlatformMetadata } from "../../../../agent/src/machined/config-source/nocloud.js";

test("meta-data names the host and instance; hostname wins over local-hostname", () => {
  const meta = nocloudMetadata(
    "instance-id: iid-basalt-1\nlocal-hostname: node-local\nhostname: node-1\nregion: r1\nzone: z1\n",
    undefined,
  );
  assert.deepEqual(meta, {
    hostname: "node-1",
    localHostname: "node-local",
    instanceId: "iid-basalt-1",
    region: "r1",
    zone: "z1",
  });
  assert.deepEqual(nocloudPlatformMetadata(meta), {
    platform: "nocloud",
    hostname: "node-1",
    region: "r1",
    zone: "z1",
    instanceId: "iid-basalt-1",
  });
  assert.deepEqual(
    nocloudPlatformMetadata(nocloudMetadata("instance-id: 42\nlocal-hostname: only-local\n", undefined)),
    { platform: "nocloud", hostname: "only-local", instanceId: "42" },
  );
});

test("without a hostname in meta-data, user-data's is used; SMBIOS h= wins; unreadable meta-data is ignored", () => {
  assert.deepEqual(nocloudMetadata("instance-id: a\n", "hostname: from-user-data\n"), {
    instanceId: "a",
    hostname: "from-user-data",
  });
  assert.deepEqual(nocloudMetadata("hostname: m\n", "hostname: u\n", "smbios"), { hostname: "smbios" });
  assert.deepEqual(nocloudMetadata(": : [", undefined), {});
  assert.deepEqual(nocloudPlatformMetadata(nocloudMetadata(undefined, undefined)), { platform: "nocloud" });
});
