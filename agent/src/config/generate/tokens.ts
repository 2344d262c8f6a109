// Random secrets in the formats `gen secrets` uses.
import { randomBytes, randomInt } from "node:crypto";

const tokenAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz";

function randomString(length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += tokenAlphabet[randomInt(tokenAlphabet.length)];
  return out;
}

/** `[0-9a-z]{6}.[0-9a-z]{16}`: machine (trustd) token and Kubernetes bootstrap token. */
export function generateToken(): string {
  return `${randomString(6)}.${randomString(16)}`;
}

export const tokenPattern = /^[0-9a-z]{6}\.[0-9a-z]{16}$/;

/** Standard base64 of 32 random bytes (cluster secret, secretbox key). */
export function randomBase64Secret(): string {
  return randomBytes(32).toString("base64");
}

/** URL-safe base64 of 32 random bytes, padded (cluster id). */
export function randomClusterId(): string {
  return randomBytes(32).toString("base64").replace(/\+/g, "-").replace(/\//g, "_");
}
