import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

const seeder = pathToFileURL(path.resolve(import.meta.dirname, "../../../agent/src/cmd/compile-cache.js")).href;

test("a baked compile cache is linked into the directory Node names for this process and V8 takes it; a second seeding links nothing", (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-compile-cache-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const mod = path.join(dir, "m.mjs");
  writeFileSync(mod, "export const answer = 42;\n");
  // The bake: Node writes the module's entry under <cache>/<its version tag>/; the image keeps the entries alone.
  execFileSync(process.execPath, [mod], { env: { ...process.env, NODE_COMPILE_CACHE: path.join(dir, "bake") } });
  const [tagDir] = readdirSync(path.join(dir, "bake"));
  mkdirSync(path.join(dir, "baked"));
  cpSync(path.join(dir, "bake", tagDir!), path.join(dir, "baked"), { recursive: true });
  assert.equal(readdirSync(path.join(dir, "baked")).length, 1);
  const boot = () =>
    spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { seedCompileCache } = await import(${JSON.stringify(seeder)}); console.log(seedCompileCache(new URL(${JSON.stringify(pathToFileURL(path.join(dir, "baked")).href + "/")}))); await import(${JSON.stringify(pathToFileURL(mod).href)});`,
      ],
      {
        env: { ...process.env, NODE_COMPILE_CACHE: path.join(dir, "run"), NODE_DEBUG_NATIVE: "COMPILE_CACHE" },
        encoding: "utf8",
      },
    );
  const first = boot();
  assert.equal(first.status, 0, first.stderr);
  assert.equal(first.stdout.trim(), "1");
  assert.match(first.stderr, new RegExp(`cache for ${pathToFileURL(mod).href.replace(/[.]/g, "\\.")} was accepted`));
  const again = boot();
  assert.equal(again.stdout.trim(), "0", "linked already");
  assert.match(again.stderr, /was accepted/);
});

test("without NODE_COMPILE_CACHE, or without a baked cache, nothing is linked", () => {
  const none = spawnSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `const { seedCompileCache } = await import(${JSON.stringify(seeder)}); console.log(seedCompileCache(new URL("file:///nonexistent/")));`,
    ],
    { encoding: "utf8", env: { ...process.env, NODE_COMPILE_CACHE: "" } },
  );
  assert.equal(none.stdout.trim(), "0", none.stderr);
  const noBake = spawnSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `const { seedCompileCache } = await import(${JSON.stringify(seeder)}); console.log(seedCompileCache(new URL("file:///nonexistent/")));`,
    ],
    {
      encoding: "utf8",
      env: { ...process.env, NODE_COMPILE_CACHE: path.join(os.tmpdir(), `basalt-cc-${process.pid}`) },
    },
  );
  assert.equal(noBake.stdout.trim(), "0", noBake.stderr);
  rmSync(path.join(os.tmpdir(), `basalt-cc-${process.pid}`), { recursive: true, force: true });
});
