import { createHash, timingSafeEqual } from "node:crypto";
import { BasaltError } from "../errors.js";

/**
 * A trustd caller without the machine token. Talos's interceptor answers with a
 * plain error whose text is "Unauthenticated", which gRPC sends as code Unknown;
 * this class has no gRPC mapping, so it reaches the wire the same way.
 */
export class TokenRejectedError extends BasaltError {
  constructor(fields: Record<string, unknown> = {}) {
    super("Unauthenticated", fields);
  }
}

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest();

/**
 * True when the first `token` metadata value equals the machine token (as Talos
 * reads it: first value only, compared whole). Digests of equal length are compared
 * in constant time, so neither the content nor the length of the token leaks
 * through timing. An empty machine token accepts nobody.
 */
export function tokenMatches(machineToken: string, presented: readonly string[]): boolean {
  const first = presented[0];
  if (machineToken === "" || first === undefined) return false;
  return timingSafeEqual(digest(machineToken), digest(first));
}
