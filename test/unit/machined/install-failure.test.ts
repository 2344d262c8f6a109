import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import {
  clearInstallFailure,
  lastInstallFailure,
  recordInstallFailure,
} from "../../../agent/src/machined/install-failure.js";
import { SystemError } from "../../../agent/src/errors.js";
import { pathsAt } from "../../../agent/src/sys/paths.js";

test("a failed install's error (with its causes) is kept for the next machined of this boot, and cleared by an install that went through", (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-install-failure-"));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const paths = pathsAt(root);
  assert.equal(lastInstallFailure(paths), undefined);
  recordInstallFailure(paths, new SystemError("writing the partition table failed", {}, { cause: new Error("EIO") }));
  assert.equal(lastInstallFailure(paths), "writing the partition table failed: EIO");
  clearInstallFailure(paths);
  assert.equal(lastInstallFailure(paths), undefined);
  clearInstallFailure(paths); // nothing to clear: no error
});
