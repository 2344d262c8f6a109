import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ConfigParseError,
  ConfigValidationError,
  InvalidInputError,
  NotFoundError,
  PermissionDeniedError,
  UnimplementedError,
} from "../../../agent/src/errors.js";
import { boundedStatusMessage, maxStatusMessageBytes, toGrpcError } from "../../../agent/src/grpc/status.js";

test("our error classes map to the gRPC codes Talos answers with", () => {
  assert.equal(toGrpcError(new InvalidInputError("x")).code, grpc.status.INVALID_ARGUMENT);
  assert.equal(toGrpcError(new ConfigValidationError(["a", "b"])).code, grpc.status.INVALID_ARGUMENT);
  assert.equal(toGrpcError(new ConfigParseError("failed to parse config: y")).code, grpc.status.UNKNOWN);
  assert.equal(toGrpcError(new NotFoundError("n")).code, grpc.status.NOT_FOUND);
  assert.equal(toGrpcError(new PermissionDeniedError("not authorized")).code, grpc.status.PERMISSION_DENIED);
  assert.equal(toGrpcError(new UnimplementedError("u")).code, grpc.status.UNIMPLEMENTED);
  assert.equal(toGrpcError(new Error("boom")).code, grpc.status.UNKNOWN);
});

test("details carry the message and its causes; gRPC-shaped errors pass through", () => {
  const err = toGrpcError(new InvalidInputError("outer", {}, { cause: new Error("inner") }));
  assert.equal(err.details, "outer: inner");
  const passthrough = toGrpcError({ code: grpc.status.UNAVAILABLE, details: "down" });
  assert.equal(passthrough.code, grpc.status.UNAVAILABLE);
  assert.equal(passthrough.details, "down");
});

test("long status messages are cut to a bounded size with a count of what was left out", () => {
  const long = "unknown document kind; ".repeat(20_000);
  const err = toGrpcError(new InvalidInputError(long));
  assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
  assert.ok(Buffer.byteLength(err.details, "utf8") <= maxStatusMessageBytes, `${Buffer.byteLength(err.details)} bytes`);
  const m = /\.\.\. \((\d+) more characters cut\)$/.exec(err.details);
  assert.ok(m, err.details.slice(-80));
  assert.equal(err.details.length - m[0].length + Number(m[1]), long.length, "the count says exactly what was cut");
  assert.ok(err.details.startsWith("unknown document kind; "));
  // Multi-byte text is cut on a character boundary and stays within the byte bound.
  const wide = boundedStatusMessage("é".repeat(10_000));
  assert.ok(Buffer.byteLength(wide, "utf8") <= maxStatusMessageBytes);
  assert.ok(!wide.includes("\uFFFD"));
  // Passed-through gRPC errors are bounded too; short ones are untouched.
  assert.ok(toGrpcError({ code: grpc.status.INTERNAL, details: long }).details.length < long.length);
  assert.equal(boundedStatusMessage("short"), "short");
});
