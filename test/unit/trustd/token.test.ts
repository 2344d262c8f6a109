import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { test } from "node:test";
import { toGrpcError } from "../../../agent/src/grpc/status.js";
import { logger } from "../../../agent/src/log.js";
import { tokenGuard } from "../../../agent/src/trustd/service.js";
import { TokenRejectedError, tokenMatches } from "../../../agent/src/trustd/token.js";

const machineToken = "abcdef.0123456789abcdef";

test("the token must equal the machine token exactly; only the first value counts", () => {
  assert.equal(tokenMatches(machineToken, [machineToken]), true);
  assert.equal(tokenMatches(machineToken, [machineToken, "other"]), true);
  assert.equal(tokenMatches(machineToken, ["other", machineToken]), false);
  assert.equal(tokenMatches(machineToken, []), false);
  assert.equal(tokenMatches(machineToken, [""]), false);
  assert.equal(tokenMatches(machineToken, [machineToken + " "]), false);
  assert.equal(tokenMatches(machineToken, [machineToken.slice(0, -1)]), false);
  assert.equal(tokenMatches(machineToken, [machineToken.toUpperCase()]), false);
  // A node whose config has no token accepts nobody, not the empty token.
  assert.equal(tokenMatches("", [""]), false);
});

function fakeCall(tokens: string[]) {
  const metadata = new grpc.Metadata();
  for (const t of tokens) metadata.add("token", t);
  return {
    metadata,
    getPeer: () => "10.0.0.9:4000",
    getAuthContext: () => ({}),
    getPath: () => "/securityapi.SecurityService/Certificate",
    cancelled: false,
  };
}

test("a wrong or missing token is refused as Talos answers it (Unknown, 'Unauthenticated') and logged", () => {
  const lines: string[] = [];
  const log = logger("trustd-test");
  const warn = log.warn.bind(log);
  log.warn = (msg, fields) => {
    lines.push(`${msg} ${JSON.stringify(fields)}`);
    warn(msg, fields);
  };
  const guard = tokenGuard(() => ({ token: machineToken, acceptedCAs: [] }), log);
  assert.doesNotThrow(() => guard("/securityapi.SecurityService/Certificate", fakeCall([machineToken]) as never));
  for (const tokens of [["wrong.0000000000000000"], []]) {
    let caught: unknown;
    try {
      guard("/securityapi.SecurityService/Certificate", fakeCall(tokens) as never);
    } catch (err) {
      caught = err;
    }
    assert.ok(caught instanceof TokenRejectedError);
    const status = toGrpcError(caught);
    assert.equal(status.code, grpc.status.UNKNOWN);
    assert.equal(status.details, "Unauthenticated");
  }
  assert.equal(lines.length, 2);
  assert.match(lines[0]!, /"token":"wrong"/);
  assert.match(lines[1]!, /"token":"missing"/);
  assert.match(lines[1]!, /10\.0\.0\.9/);
});

test("before the OS root secrets are known nobody is let in", () => {
  const guard = tokenGuard(() => undefined, logger("trustd-test"));
  assert.throws(
    () => guard("/securityapi.SecurityService/Certificate", fakeCall([machineToken]) as never),
    TokenRejectedError,
  );
});
