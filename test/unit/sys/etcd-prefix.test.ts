// The range end of a key prefix as clientv3.GetPrefixRangeEnd computes it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { prefixRangeEnd } from "../../../agent/src/sys/etcd/client.js";

test("the range end of a prefix increments its last byte", () => {
  assert.deepEqual(prefixRangeEnd("talos:v1:manifestApplyMutex/"), Buffer.from("talos:v1:manifestApplyMutex0"));
  // "ÿ" is c3 bf in UTF-8.
  assert.deepEqual(prefixRangeEnd("\u00ff"), Buffer.from([0xc3, 0xc0]));
});

test("the empty prefix ranges to the end of the keyspace", () => {
  assert.deepEqual(prefixRangeEnd(""), Buffer.from([0]));
});
