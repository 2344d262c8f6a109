// Named error classes with structured fields and a cause chain. Mapping to gRPC
// status codes happens only at the API edge (agent/src/grpc/status.ts).

export type ErrorFields = Record<string, unknown>;

export abstract class BasaltError extends Error {
  readonly fields: ErrorFields;
  constructor(message: string, fields: ErrorFields = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.fields = fields;
  }
}

/** The caller sent something malformed or invalid (gRPC InvalidArgument). */
export class InvalidInputError extends BasaltError {}

/** A configuration document failed validation; `problems` lists every one, each with its field path. */
export class ConfigValidationError extends BasaltError {
  readonly problems: string[];
  constructor(problems: string[], fields: ErrorFields = {}) {
    super(problems.join("; "), fields);
    this.problems = problems;
  }
}

/** A configuration could not be parsed at all (bad YAML, unknown kind, unknown keys). */
export class ConfigParseError extends BasaltError {}

/** A named thing does not exist (gRPC NotFound). */
export class NotFoundError extends BasaltError {}

/** Something already exists (gRPC AlreadyExists). */
export class AlreadyExistsError extends BasaltError {}

/** The caller may not do this (gRPC PermissionDenied). */
export class PermissionDeniedError extends BasaltError {}

/** A version or phase precondition did not hold (gRPC FailedPrecondition). */
export class ConflictError extends BasaltError {}

/** The method exists on the wire but is not served here or in this mode (gRPC Unimplemented). */
export class UnimplementedError extends BasaltError {}

/** The caller is not authenticated (gRPC Unauthenticated). */
export class UnauthenticatedError extends BasaltError {}

/** A wait ran out of time (gRPC DeadlineExceeded, as Go's context.DeadlineExceeded becomes). */
export class DeadlineExceededError extends BasaltError {}

/** A kernel or system call failed. */
export class SystemError extends BasaltError {}

/** Renders an error and its causes as one line: "outer: inner: innermost". */
export function describeError(err: unknown): string {
  const parts: string[] = [];
  let cur: unknown = err;
  for (let depth = 0; cur !== undefined && cur !== null && depth < 8; depth++) {
    if (cur instanceof Error) {
      parts.push(cur.message);
      cur = (cur as { cause?: unknown }).cause;
    } else {
      parts.push(String(cur));
      break;
    }
  }
  return parts.join(": ");
}
