import assert from "node:assert/strict";
import { test } from "node:test";
import { isAuthorized, normalizeRoles, rolesFor } from "../../../agent/src/grpc/roles.js";

test("method table follows reference §4.3", () => {
  assert.equal(isAuthorized("/machine.MachineService/Version", ["os:reader"]), true);
  assert.equal(isAuthorized("/machine.MachineService/ApplyConfiguration", ["os:reader"]), false);
  assert.equal(isAuthorized("/machine.MachineService/ApplyConfiguration", ["os:operator"]), false);
  assert.equal(isAuthorized("/machine.MachineService/Reboot", ["os:operator"]), true);
  assert.equal(isAuthorized("/machine.MachineService/EtcdSnapshot", ["os:etcd:backup"]), true);
  assert.equal(isAuthorized("/machine.MachineService/Version", ["os:etcd:backup"]), false);
  assert.equal(isAuthorized("/cosi.resource.State/Create", ["os:operator"]), false);
  // Methods missing from the table need os:admin.
  assert.deepEqual(rolesFor("/machine.MachineService/SomethingNew"), ["os:admin"]);
  assert.equal(isAuthorized("/machine.MachineService/Version", ["os:unknown-future-role"]), false);
});

test("roles split on commas, drop empties and duplicates", () => {
  assert.deepEqual(normalizeRoles(["os:admin,os:reader", "", " os:admin "]), ["os:admin", "os:reader"]);
});
