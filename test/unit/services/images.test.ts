// Image references, registry endpoints (mirrors, TLS, auth) and chain ids, with Talos's and
// containerd's rules; the tar reader on an archive GNU tar wrote.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import test from "node:test";
import { parseReference } from "../../../agent/src/services/images/reference.js";
import { authCredentials, registryEndpoints } from "../../../agent/src/services/images/registry.js";
import { AlreadyExistsError } from "../../../agent/src/errors.js";
import { chainIds, unpack, type StoredImage } from "../../../agent/src/services/images/store.js";
import type { ContainerdClient } from "../../../agent/src/sys/containerd/client.js";
import { tarEntries } from "../../../agent/src/services/images/tar.js";

test("parseReference normalizes as docker does", () => {
  assert.deepEqual(parseReference("alpine"), {
    domain: "docker.io",
    path: "library/alpine",
    tag: "latest",
    name: "docker.io/library/alpine:latest",
  });
  assert.equal(parseReference("alpine:3.19").name, "docker.io/library/alpine:3.19");
  assert.equal(parseReference("siderolabs/kubelet:v1.30.0").name, "docker.io/siderolabs/kubelet:v1.30.0");
  assert.equal(parseReference("ghcr.io/siderolabs/installer:v1.7.6").name, "ghcr.io/siderolabs/installer:v1.7.6");
  assert.deepEqual(parseReference("localhost:5000/a/b"), {
    domain: "localhost:5000",
    path: "a/b",
    tag: "latest",
    name: "localhost:5000/a/b:latest",
  });
  const digest = `sha256:${"a".repeat(64)}`;
  assert.deepEqual(parseReference(`registry.k8s.io/pause@${digest}`), {
    domain: "registry.k8s.io",
    path: "pause",
    digest,
    name: `registry.k8s.io/pause@${digest}`,
  });
  for (const bad of ["", "Bad//Ref", "a:b:c", "x@sha256:short"])
    assert.throws(() => parseReference(bad), /invalid image reference/);
});

test("registryEndpoints: the registry itself over HTTPS, else its mirrors (or *), /v2 appended unless overridePath", () => {
  assert.deepEqual(
    registryEndpoints(undefined, "docker.io").map((e) => e.base.href),
    ["https://registry-1.docker.io/v2"],
  );
  assert.deepEqual(
    registryEndpoints(undefined, "ghcr.io").map((e) => e.base.href),
    ["https://ghcr.io/v2"],
  );
  const reg = {
    mirrors: {
      "docker.io": { endpoints: ["http://10.0.0.1:5000", "https://mirror.example/cache/"] },
      "*": { endpoints: ["https://all.example/prefix"], overridePath: true },
    },
    config: {
      "mirror.example": {
        tls: { insecureSkipVerify: true, ca: Buffer.from("CA").toString("base64") },
        auth: { username: "u", password: "p" },
      },
    },
  };
  const eps = registryEndpoints(reg, "docker.io");
  assert.deepEqual(
    eps.map((e) => e.base.href),
    ["http://10.0.0.1:5000/v2", "https://mirror.example/cache/v2"],
  );
  assert.deepEqual(eps[1]!.tls, { rejectUnauthorized: false, ca: Buffer.from("CA") });
  assert.deepEqual(eps[1]!.credentials, { username: "u", password: "p" });
  assert.equal(eps[0]!.credentials, undefined);
  assert.deepEqual(
    registryEndpoints(reg, "quay.io").map((e) => e.base.href),
    ["https://all.example/prefix"],
  );
  assert.throws(
    () =>
      registryEndpoints(
        {
          mirrors: { "x.io": { endpoints: ["http://plain:5000"] } },
          config: { "plain:5000": { tls: { insecureSkipVerify: true } } },
        },
        "x.io",
      ),
    /TLS config specified for non-HTTPS registry: "plain:5000"/,
  );
});

test("authCredentials: username/password, identity token, base64 auth (Talos's PrepareAuth)", () => {
  assert.deepEqual(authCredentials({ username: "a", password: "b" }, "h"), { username: "a", password: "b" });
  assert.deepEqual(authCredentials({ identityToken: "tok" }, "h"), { username: "", password: "tok" });
  assert.deepEqual(authCredentials({ auth: Buffer.from("user:pa:ss").toString("base64") }, "h"), {
    username: "user",
    password: "pa:ss",
  });
  assert.throws(
    () => authCredentials({ auth: Buffer.from("nocolon").toString("base64") }, "h"),
    /invalid decoded auth for "h"/,
  );
});

test("chainIds: the first layer's diff id, then sha256 of `parent child`", () => {
  const a = `sha256:${"1".repeat(64)}`;
  const b = `sha256:${"2".repeat(64)}`;
  assert.deepEqual(chainIds([a, b]), [a, `sha256:${createHash("sha256").update(`${a} ${b}`).digest("hex")}`]);
  assert.deepEqual(chainIds([]), []);
});

test("tarEntries lists regular files with their offsets, long names included", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-tar-"));
  try {
    const long = `${"d".repeat(120)}.json`;
    writeFileSync(path.join(dir, "index.json"), "{}");
    writeFileSync(path.join(dir, long), "x".repeat(1000));
    execFileSync("tar", ["-C", dir, "-cf", path.join(dir, "a.tar"), "index.json", long]);
    const fh = await open(path.join(dir, "a.tar"), "r");
    try {
      const entries = await tarEntries(fh);
      assert.deepEqual([...entries.keys()].sort(), [long, "index.json"].sort());
      const e = entries.get(long)!;
      assert.equal(e.size, 1000);
      const buf = Buffer.alloc(e.size);
      await fh.read(buf, 0, e.size, e.offset);
      assert.equal(buf.toString(), "x".repeat(1000));
    } finally {
      await fh.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("unpack: a layer another unpack committed first counts as unpacked; its own active snapshot is removed", async () => {
  const diffIds = [`sha256:${"1".repeat(64)}`, `sha256:${"2".repeat(64)}`];
  const chain = chainIds(diffIds);
  const calls: string[] = [];
  const layer = (n: string) => ({ mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: n, size: 1 });
  // Only the calls unpack makes; the first layer's commit loses the race.
  const client = {
    hasSnapshot: async () => false,
    prepareSnapshot: async (_s: string, key: string, parent: string) => (calls.push(`prepare ${parent}`), [key]),
    applyDiff: async () => undefined,
    commitSnapshot: async (_s: string, name: string) => {
      calls.push(`commit ${name}`);
      if (name === chain[0])
        throw new AlreadyExistsError(`containerd snapshots.v1.Snapshots.Commit: snapshot "${name}": already exists`);
    },
    removeSnapshot: async (_s: string, key: string) => void calls.push(`remove ${key.split(" ")[1]}`),
  } as unknown as ContainerdClient; // a fake of the five calls unpack makes
  const manifest = { layers: [layer("sha256:a"), layer("sha256:b")] } as unknown as StoredImage["manifest"]; // layers only
  await unpack(client, { manifest, diffIds });
  assert.deepEqual(calls, [
    "prepare ",
    `commit ${chain[0]}`,
    `remove ${chain[0]}`,
    `prepare ${chain[0]}`,
    `commit ${chain[1]}`,
  ]);
});
