// RepositoryClient against a small in-process registry: a blob whose bytes do not match
// its digest is refused and leaves nothing on disk; a manifest fetched by tag must match
// the registry's Docker-Content-Digest; a redirect to another host drops the credentials.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { RepositoryClient } from "../../../agent/src/oci/client.js";
import { sha256Digest } from "../../../agent/src/oci/digest.js";
import { DigestMismatchError } from "../../../agent/src/oci/errors.js";
import { registryEndpoints } from "../../../agent/src/oci/hosts.js";
import { httpRequest } from "../../../agent/src/oci/http.js";
import { MediaType } from "../../../agent/src/oci/manifest.js";

const good = Buffer.from("the real layer");
const evil = Buffer.from("another layer!");
const manifest = Buffer.from(
  JSON.stringify({
    schemaVersion: 2,
    mediaType: MediaType.ociManifest,
    config: { mediaType: MediaType.ociConfig, digest: sha256Digest(good), size: good.length },
    layers: [],
  }),
);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-oci-client-"));
const seenAuth: (string | undefined)[] = [];
let server: http.Server;
let storage: http.Server;
let client: RepositoryClient;

describe("OCI repository client", () => {
  before(async () => {
    storage = http.createServer((req, res) => {
      seenAuth.push(req.headers.authorization);
      res.end(good);
    });
    await new Promise<void>((r) => storage.listen(0, "127.0.0.1", r));
    const storagePort = (storage.address() as AddressInfo).port;
    server = http.createServer((req, res) => {
      if (req.headers.authorization !== `Basic ${Buffer.from("u:p").toString("base64")}`) {
        res.writeHead(401, { "www-authenticate": 'Basic realm="test"' }).end();
        return;
      }
      const url = req.url ?? "";
      if (url === `/v2/r/blobs/${sha256Digest(good)}`)
        res.end(evil); // the wrong bytes under the good digest
      else if (url === "/v2/r/blobs/redirected")
        res.writeHead(307, { location: `http://localhost:${storagePort}/blob` }).end();
      else if (url === "/v2/r/manifests/good")
        res
          .writeHead(200, { "content-type": MediaType.ociManifest, "docker-content-digest": sha256Digest(manifest) })
          .end(manifest);
      else if (url === "/v2/r/manifests/lying")
        res
          .writeHead(200, { "content-type": MediaType.ociManifest, "docker-content-digest": sha256Digest(evil) })
          .end(manifest);
      else res.writeHead(404).end('{"errors":[{"code":"MANIFEST_UNKNOWN"}]}');
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const [endpoint] = registryEndpoints(
      {
        mirrors: { [host]: { endpoints: [`http://${host}`] } },
        config: { [host]: { auth: { username: "u", password: "p" } } },
      },
      host,
    );
    client = new RepositoryClient(endpoint!, "r");
  });
  after(() => {
    server.close();
    storage.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a blob whose bytes do not match its digest and leaves no file", async () => {
    const dest = path.join(dir, "layer");
    await assert.rejects(
      client.blobToFile({ mediaType: MediaType.ociLayer, digest: sha256Digest(good), size: good.length }, dest),
      DigestMismatchError,
    );
    assert.deepEqual(fs.readdirSync(dir), []);
  });

  it("checks a manifest fetched by tag against Docker-Content-Digest", async () => {
    assert.equal((await client.manifest("good")).digest, sha256Digest(manifest));
    await assert.rejects(client.manifest("lying"), DigestMismatchError);
    await assert.rejects(client.manifest("missing"), /answered 404/);
  });

  it("follows a redirect to blob storage without sending the registry's credentials there", async () => {
    const res = await httpRequest({
      method: "GET",
      url: new URL(`${client.endpoint.base.href}/r/blobs/redirected`),
      headers: { authorization: `Basic ${Buffer.from("u:p").toString("base64")}` },
    });
    res.resume();
    assert.equal(res.statusCode, 200);
    assert.deepEqual(seenAuth, [undefined]);
  });
});
