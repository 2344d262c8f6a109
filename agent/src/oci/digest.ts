import { createHash, type Hash } from "node:crypto";
import { InvalidInputError } from "../errors.js";
import { DigestMismatchError } from "./errors.js";

const digestRe = /^sha256:([a-f0-9]{64})$/;

export function sha256Digest(data: Uint8Array): string {
  return `sha256:${createHash("sha256").update(data).digest("hex")}`;
}

/** Checks that a digest is one we can verify (sha256 is the only algorithm OCI requires). */
export function checkDigest(digest: string): string {
  const m = digestRe.exec(digest);
  if (!m) throw new InvalidInputError(`unsupported digest "${digest}" (only sha256:<hex> is verified)`, { digest });
  return m[1]!;
}

/** Hashes bytes as they stream by and checks the count and hash at the end. */
export class DigestVerifier {
  private readonly hash: Hash = createHash("sha256");
  private bytes = 0;
  constructor(
    readonly digest: string,
    readonly size?: number,
  ) {
    checkDigest(digest);
  }

  update(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    if (this.size !== undefined && this.bytes > this.size)
      throw new DigestMismatchError(`${this.digest}: more than the ${this.size} bytes its descriptor names`, {
        digest: this.digest,
        size: this.size,
      });
    this.hash.update(chunk);
  }

  /** Throws DigestMismatchError unless the bytes seen are exactly the named content. */
  finish(): void {
    if (this.size !== undefined && this.bytes !== this.size)
      throw new DigestMismatchError(`${this.digest}: got ${this.bytes} bytes, the descriptor names ${this.size}`, {
        digest: this.digest,
        size: this.size,
        got: this.bytes,
      });
    const got = `sha256:${this.hash.digest("hex")}`;
    if (got !== this.digest)
      throw new DigestMismatchError(`content does not match its digest: expected ${this.digest}, got ${got}`, {
        digest: this.digest,
        got,
      });
  }
}

/** Verifies a whole buffer against a digest (and size when given). */
export function verifyBytes(data: Uint8Array, digest: string, size?: number): void {
  const v = new DigestVerifier(digest, size);
  v.update(data);
  v.finish();
}
