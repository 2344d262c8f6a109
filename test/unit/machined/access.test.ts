import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { test } from "node:test";
import { PermissionDeniedError, UnimplementedError } from "../../../agent/src/errors.js";
import { machinedGuard, maintenanceGuard, rbacGuard } from "../../../agent/src/machined/access.js";

const unimplemented = (msg: RegExp) => (err: unknown) => err instanceof UnimplementedError && msg.test(err.message);

test("maintenance mode serves exactly the Talos v1.7 set", () => {
  for (const p of [
    "/machine.MachineService/ApplyConfiguration",
    "/storage.StorageService/Disks",
    "/cosi.resource.State/List",
    "/cosi.resource.State/Get",
  ]) {
    assert.doesNotThrow(() => maintenanceGuard(p, ["os:reader"]), p);
  }
  assert.throws(
    () => maintenanceGuard("/machine.MachineService/Version", ["os:reader"]),
    unimplemented(/^API is not implemented in maintenance mode$/),
  );
  assert.doesNotThrow(() => maintenanceGuard("/machine.MachineService/Version", ["os:admin"]));
  assert.throws(
    () => maintenanceGuard("/machine.MachineService/ServiceList", ["os:admin"]),
    unimplemented(/method ServiceList not implemented/),
  );
  assert.throws(
    () => maintenanceGuard("/time.TimeService/Time", ["os:admin"]),
    unimplemented(/unknown service time.TimeService/),
  );
  assert.throws(
    () => maintenanceGuard("/machine.MachineService/GenerateClientConfiguration", ["os:admin"]),
    UnimplementedError,
  );
});

test("normal mode checks roles; trustd's service is never served by machined", () => {
  assert.throws(() => rbacGuard("/machine.MachineService/ApplyConfiguration", ["os:reader"]), PermissionDeniedError);
  assert.doesNotThrow(() => rbacGuard("/machine.MachineService/ApplyConfiguration", ["os:admin"]));
  assert.throws(() => rbacGuard("/machine.MachineService/Version", []), PermissionDeniedError);
  assert.throws(() => rbacGuard("/securityapi.SecurityService/Certificate", ["os:admin"]), UnimplementedError);
});

test("the guard takes roles from talos-role and maintenance rules from mode or listener tag", () => {
  let maintenance = false;
  const guard = machinedGuard(() => maintenance);
  const md = new grpc.Metadata();
  md.add("talos-role", "os:reader");
  assert.doesNotThrow(() => guard("/machine.MachineService/Version", { metadata: md }));
  md.set("basalt-listener", "maintenance");
  assert.throws(() => guard("/machine.MachineService/Version", { metadata: md }), UnimplementedError);
  const plain = new grpc.Metadata();
  plain.add("talos-role", "os:reader");
  maintenance = true;
  assert.throws(() => guard("/machine.MachineService/Version", { metadata: plain }), UnimplementedError);
});
