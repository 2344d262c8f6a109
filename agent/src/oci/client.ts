// The OCI distribution API for one repository at one endpoint: manifests and blobs
// pulled with every byte verified against its digest, and pushes (monolithic uploads).

import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import type { IncomingMessage } from "node:http";
import path from "node:path";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { NotFoundError } from "../errors.js";
import { answerChallenge, parseChallenge } from "./auth.js";
import { DigestVerifier, sha256Digest, verifyBytes } from "./digest.js";
import { RegistryError } from "./errors.js";
import type { RegistryEndpoint } from "./hosts.js";
import { httpRequest, readBody, type HttpRequest } from "./http.js";
import { manifestAccept, parseManifest, type Descriptor, type ImageIndex, type ImageManifest } from "./manifest.js";

const manifestLimit = 4 * 1024 * 1024;

export interface FetchedManifest {
  digest: string;
  mediaType: string;
  body: Buffer;
  parsed: ImageIndex | ImageManifest;
}

export class RepositoryClient {
  private authorization: string | undefined;

  constructor(
    readonly endpoint: RegistryEndpoint,
    readonly repository: string,
  ) {}

  private url(suffix: string): URL {
    const u = new URL(this.endpoint.base.href);
    u.pathname = `${u.pathname}/${this.repository}/${suffix}`;
    return u;
  }

  /** Sends a request, answering one authentication challenge if the registry makes it. */
  private async send(req: Omit<HttpRequest, "tls">, scope: "pull" | "pull,push"): Promise<IncomingMessage> {
    const attempt = () =>
      httpRequest({
        ...req,
        headers: { ...req.headers, ...(this.authorization ? { authorization: this.authorization } : {}) },
        ...(this.endpoint.tls ? { tls: this.endpoint.tls } : {}),
      });
    let res = await attempt();
    if (res.statusCode === 401 && res.headers["www-authenticate"]) {
      res.resume();
      const challenge = parseChallenge(res.headers["www-authenticate"]);
      if (!challenge)
        throw new RegistryError(`unreadable authentication challenge from ${this.endpoint.base.host}`, {
          host: this.endpoint.base.host,
        });
      this.authorization = await answerChallenge(challenge, this.endpoint, `repository:${this.repository}:${scope}`);
      res = await attempt();
    }
    return res;
  }

  private async failure(res: IncomingMessage, what: string): Promise<Error> {
    const body = await readBody(res, 64 * 1024).catch(() => Buffer.alloc(0));
    const fields = { host: this.endpoint.base.host, repository: this.repository, status: res.statusCode };
    const text = `${what}: ${this.endpoint.base.host} answered ${res.statusCode} ${body.toString("utf8").trim().slice(0, 300)}`;
    return res.statusCode === 404 ? new NotFoundError(text, fields) : new RegistryError(text, fields);
  }

  /** A manifest by tag or digest; by digest it must match, by tag the registry's Docker-Content-Digest must. */
  async manifest(reference: string, expected?: Descriptor): Promise<FetchedManifest> {
    const res = await this.send(
      { method: "GET", url: this.url(`manifests/${reference}`), headers: { accept: manifestAccept } },
      "pull",
    );
    if (res.statusCode !== 200) throw await this.failure(res, `manifest ${this.repository}:${reference}`);
    const body = await readBody(res, manifestLimit);
    const digest = expected?.digest ?? (reference.startsWith("sha256:") ? reference : undefined);
    if (digest) verifyBytes(body, digest, expected?.size);
    const served = res.headers["docker-content-digest"];
    const actual = sha256Digest(body);
    if (typeof served === "string" && served.startsWith("sha256:")) verifyBytes(body, served);
    const contentType = res.headers["content-type"];
    const parsed = parseManifest(body, contentType);
    return { digest: actual, mediaType: parsed.mediaType, body, parsed };
  }

  /**
   * Streams a blob into `dest`: written to a temporary file beside it, hashed on the
   * way, and renamed into place only once size and digest match (removed otherwise).
   */
  async blobToFile(desc: Descriptor, dest: string): Promise<void> {
    const res = await this.send({ method: "GET", url: this.url(`blobs/${desc.digest}`) }, "pull");
    if (res.statusCode !== 200) throw await this.failure(res, `blob ${desc.digest}`);
    const tmp = path.join(path.dirname(dest), `.${path.basename(dest)}.${randomBytes(6).toString("hex")}.partial`);
    const verifier = new DigestVerifier(desc.digest, desc.size);
    const hashing = new Transform({
      transform(chunk: Buffer, _enc, done) {
        try {
          verifier.update(chunk);
          done(null, chunk);
        } catch (err) {
          done(err as Error);
        }
      },
      flush(done) {
        try {
          verifier.finish();
          done();
        } catch (err) {
          done(err as Error);
        }
      },
    });
    try {
      await pipeline(res, hashing, createWriteStream(tmp, { mode: 0o600 }));
      const fh = await fs.open(tmp, "r");
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fs.rename(tmp, dest);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
  }

  async hasBlob(digest: string): Promise<boolean> {
    const res = await this.send({ method: "HEAD", url: this.url(`blobs/${digest}`) }, "pull,push");
    res.resume();
    return res.statusCode === 200;
  }

  /** Uploads a blob in one PUT unless the registry already has it. */
  async pushBlob(desc: Pick<Descriptor, "digest" | "size">, body: Buffer | (() => Readable)): Promise<void> {
    if (await this.hasBlob(desc.digest)) return;
    const start = await this.send({ method: "POST", url: this.url("blobs/uploads/") }, "pull,push");
    if (start.statusCode !== 202 || !start.headers.location)
      throw await this.failure(start, `starting the upload of ${desc.digest}`);
    start.resume();
    const put = new URL(start.headers.location, this.endpoint.base);
    put.searchParams.set("digest", desc.digest);
    const res = await this.send(
      {
        method: "PUT",
        url: put,
        headers: { "content-type": "application/octet-stream", "content-length": String(desc.size) },
        body,
      },
      "pull,push",
    );
    if (res.statusCode !== 201) throw await this.failure(res, `uploading ${desc.digest}`);
    res.resume();
  }

  async pushManifest(reference: string, mediaType: string, body: Buffer): Promise<void> {
    const res = await this.send(
      {
        method: "PUT",
        url: this.url(`manifests/${reference}`),
        headers: { "content-type": mediaType, "content-length": String(body.length) },
        body,
      },
      "pull,push",
    );
    if (res.statusCode !== 201) throw await this.failure(res, `putting manifest ${this.repository}:${reference}`);
    res.resume();
  }
}

/** A file's size and digest, read once. */
export async function describeFile(file: string): Promise<{ digest: string; size: number }> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { digest: `sha256:${hash.digest("hex")}`, size };
}
