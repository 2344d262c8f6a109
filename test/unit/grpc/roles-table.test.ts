// Every method of rpc-index.tsv against the role table, as apid and machined check it (reference §4.3).
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { allMethods } from "../../../agent/src/api/index.js";
import { PermissionDeniedError, UnimplementedError } from "../../../agent/src/errors.js";
import { rbacGuard } from "../../../agent/src/machined/access.js";
import { allRoles, isAuthorized } from "../../../agent/src/grpc/roles.js";
import { toGrpcError } from "../../../agent/src/grpc/status.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const rpcIndexPath = path.join(repoRoot, "test/fixtures/talos-api/rpc-index.tsv");

/** Rows of rpc-index.tsv: method path and the roles it allows (undefined: trustd's token, not a role). */
function rows(): { path: string; roles: string[] | undefined }[] {
  const [header, ...lines] = fs
    .readFileSync(rpcIndexPath, "utf8")
    .trim()
    .split("\n")
    .map((l) => l.split("\t"));
  const col = (name: string) => header!.indexOf(name);
  return lines.map((cells) => {
    const full = cells[col("method")]!;
    const dot = full.lastIndexOf(".");
    const required = cells[col("required_roles")]!;
    // "os:admin,os:reader (sensitive types: os:admin)": the parenthesis is the per-resource check.
    const roles = required.startsWith("none")
      ? undefined
      : required
          .replace(/\s*\(.*\)$/, "")
          .split(",")
          .map((r) => r.trim());
    return { path: `/${full.slice(0, dot)}/${full.slice(dot + 1)}`, roles };
  });
}

test("every method of rpc-index.tsv allows exactly its roles, in apid's check and machined's guard", () => {
  const table = rows();
  assert.ok(table.length >= 60, `${table.length} rows`);
  const known = new Set(allMethods().map((m) => m.path));
  for (const { path: p, roles } of table) {
    assert.ok(known.has(p), `${p} is served`);
    if (roles === undefined) {
      // trustd's method is never served by machined: unknown service, whatever the roles.
      assert.throws(() => rbacGuard(p, [...allRoles]), UnimplementedError);
      continue;
    }
    for (const role of [...allRoles, "os:unknown"]) {
      const allowed = roles.includes(role);
      assert.equal(isAuthorized(p, [role]), allowed, `${p} for ${role}`);
      if (allowed) assert.doesNotThrow(() => rbacGuard(p, [role]), `${p} for ${role}`);
      else {
        let refused: unknown;
        assert.throws(
          () => rbacGuard(p, [role]),
          (e) => ((refused = e), e instanceof PermissionDeniedError),
        );
        const st = toGrpcError(refused);
        assert.deepEqual([st.code, st.details], [grpc.status.PERMISSION_DENIED, "not authorized"], `${p} for ${role}`);
      }
    }
    assert.throws(() => rbacGuard(p, []), PermissionDeniedError, `${p} with no roles`);
  }
});
