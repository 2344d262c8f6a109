#!/usr/bin/env node
// Bundles the agent (agent/src/cmd/main.ts, the multi-call entry point) into one
// ESM file for Node 22 and copies agent/api/**/*.proto beside it as api/ (the
// proto loader finds an `api` directory next to the bundle).
//
// usage: node scripts/bundle.mjs [outdir]     (default _out/bundle)
// Output: <outdir>/basalt.mjs, <outdir>/api/**, <outdir>/meta.json (esbuild metafile),
// <outdir>/native/koffi-{x64,arm64}.node.
import { build } from "esbuild";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outdir = path.resolve(repo, process.argv[2] ?? "_out/bundle");

fs.rmSync(outdir, { recursive: true, force: true });
fs.mkdirSync(outdir, { recursive: true });

const result = await build({
  entryPoints: [path.join(repo, "agent/src/cmd/main.ts")],
  outfile: path.join(outdir, "basalt.mjs"),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  minify: true, // smaller parse work at boot; names kept for readable stack traces
  keepNames: true,
  sourcemap: false,
  legalComments: "linked",
  metafile: true,
  logLevel: "warning",
  // Dependencies written for CommonJS call require(); give the ESM bundle one.
  banner: { js: 'import { createRequire as __basaltCreateRequire } from "node:module"; const require = __basaltCreateRequire(import.meta.url);' },
});
fs.writeFileSync(path.join(outdir, "meta.json"), JSON.stringify(result.metafile));

fs.cpSync(path.join(repo, "agent/api"), path.join(outdir, "api"), {
  recursive: true,
  filter: (src) => fs.statSync(src).isDirectory() || src.endsWith(".proto"),
});

// koffi's addon (libc FFI for the kernel clock), loaded as native/koffi-<arch>.node by sys/clock-kernel.ts.
fs.mkdirSync(path.join(outdir, "native"), { recursive: true });
for (const arch of ["x64", "arm64"]) {
  fs.copyFileSync(path.join(repo, "node_modules/koffi/build/koffi", `linux_${arch}`, "koffi.node"), path.join(outdir, "native", `koffi-${arch}.node`));
}

const size = fs.statSync(path.join(outdir, "basalt.mjs")).size;
console.log(`bundle: ${path.relative(repo, outdir)}/basalt.mjs ${(size / 1024).toFixed(0)} KiB`);
