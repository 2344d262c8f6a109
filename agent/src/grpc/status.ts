import * as grpc from "@grpc/grpc-js";
import {
  AlreadyExistsError,
  BasaltError,
  ConfigParseError,
  ConfigValidationError,
  ConflictError,
  DeadlineExceededError,
  describeError,
  InvalidInputError,
  NotFoundError,
  PermissionDeniedError,
  UnauthenticatedError,
  UnimplementedError,
} from "../errors.js";

// The API edge: our error classes become gRPC status codes here and nowhere else.
const codes: [new (...args: never[]) => BasaltError, grpc.status][] = [
  [InvalidInputError, grpc.status.INVALID_ARGUMENT],
  [ConfigValidationError, grpc.status.INVALID_ARGUMENT],
  // Talos returns a config parse failure as a plain (non-status) error, which gRPC reports as Unknown.
  [ConfigParseError, grpc.status.UNKNOWN],
  [NotFoundError, grpc.status.NOT_FOUND],
  [AlreadyExistsError, grpc.status.ALREADY_EXISTS],
  [PermissionDeniedError, grpc.status.PERMISSION_DENIED],
  [ConflictError, grpc.status.FAILED_PRECONDITION],
  [UnimplementedError, grpc.status.UNIMPLEMENTED],
  [UnauthenticatedError, grpc.status.UNAUTHENTICATED],
  [DeadlineExceededError, grpc.status.DEADLINE_EXCEEDED],
];

export function grpcCode(err: unknown): grpc.status {
  const e = err as { code?: unknown } | undefined;
  if (!(err instanceof BasaltError) && typeof e?.code === "number") return e.code as grpc.status;
  for (const [cls, code] of codes) if (err instanceof cls) return code;
  return grpc.status.UNKNOWN;
}

/**
 * Longest status message we send. The message travels in an HTTP/2 trailer; one
 * over the peer's header-list limit (8 KiB in grpc-js, 16 KiB in Go) is a protocol
 * error that resets the whole connection, not just the call.
 */
export const maxStatusMessageBytes = 4096;

/** Cuts a status message to `max` UTF-8 bytes, saying how many characters were left out. */
export function boundedStatusMessage(message: string, max = maxStatusMessageBytes): string {
  if (Buffer.byteLength(message, "utf8") <= max) return message;
  // Room for the note; the note itself is at most ~40 bytes.
  let keep = Math.max(0, max - 64);
  // Cut on a character boundary: shrink until the UTF-8 prefix fits.
  let head = message.slice(0, keep);
  while (Buffer.byteLength(head, "utf8") > max - 64) head = head.slice(0, --keep);
  return `${head}... (${message.length - head.length} more characters cut)`;
}

/** Turns any thrown value into the ServiceError grpc-js sends; errors already carrying a gRPC code pass through. */
export function toGrpcError(err: unknown): grpc.ServiceError {
  const e = err as Partial<grpc.ServiceError> | undefined;
  if (!(err instanceof BasaltError) && typeof e?.code === "number") {
    const details = boundedStatusMessage(e.details ?? e.message ?? "");
    return Object.assign(new Error(details), { code: e.code, details, metadata: e.metadata ?? new grpc.Metadata() });
  }
  const details = boundedStatusMessage(describeError(err));
  return Object.assign(new Error(details), { code: grpcCode(err), details, metadata: new grpc.Metadata() });
}
