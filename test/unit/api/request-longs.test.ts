// A 64-bit integer in a request a server decodes: a number while one holds it exactly, else its
// exact decimal string (etcd member IDs use all 64 bits); nested messages alike.
import assert from "node:assert/strict";
import { test } from "node:test";
import type * as grpc from "@grpc/grpc-js";
import { decode, encode, serviceDefinition } from "../../../agent/src/api/index.js";

const requestOf = (method: string, type: string, value: object) => {
  const def = serviceDefinition("machine.MachineService")[method] as grpc.MethodDefinition<object, object>;
  return def.requestDeserialize(encode(type, value));
};

test("a uint64 past 2^53 arrives as its exact decimal string", () => {
  for (const id of ["18446744073709551615", "12345678901234567891", "9007199254740993"]) {
    assert.deepEqual(requestOf("EtcdRemoveMemberByID", "machine.EtcdRemoveMemberByIDRequest", { member_id: id }), {
      member_id: id,
    });
  }
});

test("a 64-bit integer a number holds exactly stays a number", () => {
  assert.deepEqual(
    requestOf("EtcdRemoveMemberByID", "machine.EtcdRemoveMemberByIDRequest", { member_id: "9007199254740991" }),
    { member_id: 9007199254740991 },
  );
  assert.deepEqual(requestOf("EtcdRemoveMemberByID", "machine.EtcdRemoveMemberByIDRequest", {}), { member_id: 0 });
});

test("64-bit integers in nested messages follow the same rule", () => {
  const req = requestOf("GenerateClientConfiguration", "machine.GenerateClientConfigurationRequest", {
    roles: ["os:reader"],
    crt_ttl: { seconds: 3600, nanos: 5 },
  });
  assert.deepEqual(req, { roles: ["os:reader"], crt_ttl: { seconds: 3600, nanos: 5 } });
});

test("replies and decode() keep the convention of 64-bit integers as numbers", () => {
  assert.deepEqual(
    decode(
      "machine.EtcdRemoveMemberByIDRequest",
      encode("machine.EtcdRemoveMemberByIDRequest", { member_id: "12345678901234567891" }),
    ),
    { member_id: 12345678901234567000 },
  );
});
