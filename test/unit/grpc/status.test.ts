import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigParseError, ConfigValidationError, InvalidInputError, NotFoundError, PermissionDeniedError, UnimplementedError } from "../../../agent/src/errors.js";
import { toGrpcError } from "../../../agent/src/grpc/status.js";

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
