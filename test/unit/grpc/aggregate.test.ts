import assert from "node:assert/strict";
import { test } from "node:test";
import { decode, encode } from "../../../agent/src/api/index.js";
import { failedNodeReply, tagStreamMessage, tagUnaryReply } from "../../../agent/src/grpc/aggregate.js";

test("unary replies of several nodes concatenate into one reply, each tagged with its node", () => {
  const reply = encode("machine.VersionResponse", { messages: [{ version: { tag: "v1.7.6" } }] });
  const merged = Buffer.concat([
    tagUnaryReply(reply, "10.0.0.1"),
    failedNodeReply({ hostname: "10.0.0.2", error: "down", status: { code: 14, message: "down" } }),
  ]);
  const out = decode("machine.VersionResponse", merged) as {
    messages: { metadata: { hostname: string; error: string }; version: { tag: string } | null }[];
  };
  assert.equal(out.messages.length, 2);
  assert.equal(out.messages[0]!.metadata.hostname, "10.0.0.1");
  assert.equal(out.messages[0]!.version!.tag, "v1.7.6");
  assert.equal(out.messages[1]!.metadata.hostname, "10.0.0.2");
  assert.equal(out.messages[1]!.metadata.error, "down");
});

test("a reply that is not exactly one messages element cannot be tagged", () => {
  const two = encode("machine.VersionResponse", { messages: [{}, {}] });
  assert.throws(() => tagUnaryReply(two, "n"));
  assert.throws(() => tagUnaryReply(Buffer.alloc(0), "n"));
});

test("streamed messages get the node appended into metadata", () => {
  const data = encode("common.Data", { bytes: Buffer.from("hi") });
  const out = decode("common.Data", tagStreamMessage(data, "node-a")) as {
    metadata: { hostname: string };
    bytes: Buffer;
  };
  assert.equal(out.metadata.hostname, "node-a");
  assert.equal(out.bytes.toString(), "hi");
});
