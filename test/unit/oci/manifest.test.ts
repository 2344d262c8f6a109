import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InvalidInputError, NotFoundError } from "../../../agent/src/errors.js";
import { sha256Digest, verifyBytes, DigestVerifier } from "../../../agent/src/oci/digest.js";
import { DigestMismatchError } from "../../../agent/src/oci/errors.js";
import { registryEndpoints } from "../../../agent/src/oci/hosts.js";
import { MediaType, parseManifest, selectPlatform } from "../../../agent/src/oci/manifest.js";
import { parseImageReference } from "../../../agent/src/oci/reference.js";
import { parseChallenge } from "../../../agent/src/oci/auth.js";

const d = (c: string) => `sha256:${c.repeat(64)}`;
const json = (v: unknown) => Buffer.from(JSON.stringify(v));

describe("image references", () => {
  it("splits host, repository, tag and digest as Docker does", () => {
    assert.deepEqual(parseImageReference("10.0.2.2:5000/basalt/installer:v0.2.0"), {
      host: "10.0.2.2:5000",
      repository: "basalt/installer",
      tag: "v0.2.0",
    });
    assert.deepEqual(parseImageReference("ghcr.io/siderolabs/installer:v1.7.6"), {
      host: "ghcr.io",
      repository: "siderolabs/installer",
      tag: "v1.7.6",
    });
    assert.deepEqual(parseImageReference("alpine"), { host: "docker.io", repository: "library/alpine", tag: "latest" });
    assert.deepEqual(parseImageReference("localhost/x@" + d("a")), {
      host: "localhost",
      repository: "x",
      digest: d("a"),
    });
    assert.deepEqual(parseImageReference("user/repo"), { host: "docker.io", repository: "user/repo", tag: "latest" });
  });

  it("refuses malformed references as the caller's error", () => {
    for (const bad of ["", "Upper/Case", "host:5000/repo:bad tag", "repo@sha256:short", "host/repo:"]) {
      assert.throws(() => parseImageReference(bad), InvalidInputError, bad);
    }
  });
});

describe("manifests and indexes", () => {
  const layer = { mediaType: MediaType.ociLayer, digest: d("1"), size: 10 };
  const config = { mediaType: MediaType.ociConfig, digest: d("2"), size: 3 };

  it("parses an OCI index and picks the linux manifest of an architecture", () => {
    const index = parseManifest(
      json({
        schemaVersion: 2,
        mediaType: MediaType.ociIndex,
        manifests: [
          {
            mediaType: MediaType.ociManifest,
            digest: d("3"),
            size: 100,
            platform: { architecture: "amd64", os: "linux" },
          },
          {
            mediaType: MediaType.ociManifest,
            digest: d("4"),
            size: 101,
            platform: { architecture: "arm64", os: "linux", variant: "v8" },
          },
        ],
      }),
    );
    assert.equal(index.kind, "index");
    assert.equal(index.kind === "index" && selectPlatform(index, "arm64").digest, d("4"));
    assert.throws(
      () => index.kind === "index" && selectPlatform(index, "riscv64"),
      (err: unknown) => err instanceof NotFoundError && /has: linux\/amd64, linux\/arm64/.test((err as Error).message),
    );
  });

  it("parses image manifests, OCI and Docker v2 (media type from the body or the header)", () => {
    const m = parseManifest(json({ schemaVersion: 2, mediaType: MediaType.ociManifest, config, layers: [layer] }));
    assert.deepEqual(m, { kind: "manifest", mediaType: MediaType.ociManifest, config, layers: [layer] });
    const docker = parseManifest(
      json({ schemaVersion: 2, config, layers: [layer] }),
      `${MediaType.dockerManifest}; charset=utf-8`,
    );
    assert.equal(docker.mediaType, MediaType.dockerManifest);
    const list = parseManifest(json({ schemaVersion: 2, mediaType: MediaType.dockerList, manifests: [] }));
    assert.equal(list.kind, "index");
  });

  it("refuses what is not a valid manifest, naming the field", () => {
    const cases: [unknown, RegExp, string?][] = [
      [{ schemaVersion: 1 }, /schemaVersion 1 is not 2/],
      [
        { schemaVersion: 2, mediaType: MediaType.ociManifest, config, layers: [{ ...layer, digest: "md5:x" }] },
        /unsupported digest/,
      ],
      [
        { schemaVersion: 2, mediaType: MediaType.ociManifest, config, layers: [{ ...layer, size: -1 }] },
        /layers\[0\]\.size/,
      ],
      [{ schemaVersion: 2, mediaType: MediaType.ociManifest, layers: [] }, /config: a descriptor must be an object/],
      [{ schemaVersion: 2, mediaType: "application/x-other" }, /unsupported manifest media type/],
      [
        { schemaVersion: 2, mediaType: MediaType.ociIndex, manifests: [] },
        /served as application\/vnd.oci.image.manifest/,
        MediaType.ociManifest,
      ],
    ];
    for (const [doc, re, header] of cases) assert.throws(() => parseManifest(json(doc), header), re);
    assert.throws(() => parseManifest(Buffer.from("{not json")), /not JSON/);
  });
});

describe("digests", () => {
  it("accepts the exact bytes and refuses one flipped bit, a short and a long body", () => {
    const body = Buffer.from("installer layer bytes");
    const digest = sha256Digest(body);
    verifyBytes(body, digest, body.length);
    const flipped = Buffer.from(body);
    flipped[3]! ^= 1;
    assert.throws(() => verifyBytes(flipped, digest, body.length), DigestMismatchError);
    assert.throws(() => verifyBytes(body.subarray(1), digest, body.length), /got 20 bytes, the descriptor names 21/);
    const v = new DigestVerifier(digest, body.length);
    v.update(body);
    assert.throws(() => v.update(Buffer.from("x")), /more than the 21 bytes/);
  });
});

describe("registry endpoints from .machine.registries", () => {
  it("uses the host's mirror endpoints (then '*'), else https://host; adds /v2 unless overridePath", () => {
    const reg = {
      mirrors: {
        "10.0.2.2:5000": { endpoints: ["http://10.0.2.2:5000"] },
        "*": { endpoints: ["https://cache.local/proxy/"] },
        "ghcr.io": { endpoints: ["https://m.local/v2/ghcr"], overridePath: true },
      },
      config: { "10.0.2.2:5000": { auth: { auth: Buffer.from("u:p\0\0").toString("base64") } } },
    };
    const local = registryEndpoints(reg, "10.0.2.2:5000");
    assert.deepEqual(
      local.map((e) => e.base.href),
      ["http://10.0.2.2:5000/v2"],
    );
    assert.deepEqual(local[0]!.credentials, { username: "u", password: "p" });
    assert.deepEqual(
      registryEndpoints(reg, "quay.io").map((e) => e.base.href),
      ["https://cache.local/proxy/v2"],
    );
    assert.deepEqual(
      registryEndpoints(reg, "ghcr.io").map((e) => e.base.href),
      ["https://m.local/v2/ghcr"],
    );
    assert.deepEqual(
      registryEndpoints({}, "docker.io").map((e) => e.base.href),
      ["https://registry-1.docker.io/v2"],
    );
    assert.deepEqual(
      registryEndpoints(undefined, "r.example:443").map((e) => e.base.href),
      ["https://r.example/v2"],
    );
  });

  it("refuses TLS settings for a plain-HTTP endpoint, as Talos does", () => {
    assert.throws(
      () =>
        registryEndpoints(
          { mirrors: { r: { endpoints: ["http://r"] } }, config: { r: { tls: { insecureSkipVerify: true } } } },
          "r",
        ),
      /TLS config specified for non-HTTPS registry/,
    );
  });
});

describe("authentication challenges", () => {
  it("parses Bearer and Basic challenges with quoted, comma-separated parameters", () => {
    assert.deepEqual(
      parseChallenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/alpine:pull"',
      ),
      {
        scheme: "bearer",
        params: {
          realm: "https://auth.docker.io/token",
          service: "registry.docker.io",
          scope: "repository:library/alpine:pull",
        },
      },
    );
    assert.deepEqual(parseChallenge('Basic realm="Registry Realm"'), {
      scheme: "basic",
      params: { realm: "Registry Realm" },
    });
  });
});
