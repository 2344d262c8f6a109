import * as grpc from "@grpc/grpc-js";
import {
  AlreadyExistsError,
  BasaltError,
  ConfigParseError,
  ConfigValidationError,
  ConflictError,
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
];

export function grpcCode(err: unknown): grpc.status {
  const e = err as { code?: unknown } | undefined;
  if (!(err instanceof BasaltError) && typeof e?.code === "number") return e.code as grpc.status;
  for (const [cls, code] of codes) if (err instanceof cls) return code;
  return grpc.status.UNKNOWN;
}

/** Turns any thrown value into the ServiceError grpc-js sends; errors already carrying a gRPC code pass through. */
export function toGrpcError(err: unknown): grpc.ServiceError {
  const e = err as Partial<grpc.ServiceError> | undefined;
  if (!(err instanceof BasaltError) && typeof e?.code === "number") {
    const details = e.details ?? e.message ?? "";
    return Object.assign(new Error(details), { code: e.code, details, metadata: e.metadata ?? new grpc.Metadata() });
  }
  const details = describeError(err);
  return Object.assign(new Error(details), { code: grpcCode(err), details, metadata: new grpc.Metadata() });
}
