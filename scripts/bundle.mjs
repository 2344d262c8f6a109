#!/usr/bin/env node
// Bundles the agent (agent/src/cmd/main.ts, the multi-call entry point) for Node 22:
// basalt.mjs, split at each command's dynamic import so a process parses and keeps
// only its command's code (chunks beside it); copies agent/api/**/*.proto beside
// it as api/ (the proto loader finds an `api` directory next to the bundle).
//
// usage: node scripts/bundle.mjs [outdir]     (default _out/bundle)
// Output: <outdir>/basalt.mjs, <outdir>/*-<hash>.mjs, <outdir>/api/**, <outdir>/meta.json (esbuild metafile),
// <outdir>/native/netlink-{x64,arm64}.node (the rtnetlink addon's prebuilds; the bundle
// loads the one of the running architecture), <outdir>/native/koffi-{x64,arm64}.node
// (scripts/build-native.sh adds native/kernel-calls-<arch>.node for the target alone).
import { build } from "esbuild";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const nativeArchs = ["x64", "arm64"];
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outdir = path.resolve(repo, process.argv[2] ?? "_out/bundle");

fs.rmSync(outdir, { recursive: true, force: true });
fs.mkdirSync(outdir, { recursive: true });

const result = await build({
  entryPoints: [path.join(repo, "agent/src/cmd/main.ts")],
  outdir,
  entryNames: "basalt",
  outExtension: { ".js": ".mjs" },
  // apid would otherwise hold machined's and ctl's code too (more memory per process).
  splitting: true,
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
  banner: {
    js: 'import { createRequire as __basaltCreateRequire } from "node:module"; const require = __basaltCreateRequire(import.meta.url);',
  },
  plugins: [netlinkAddon(), builtinsThroughRequire()],
  // dbus-next's client reads an X11 session's bus address through the optional `x11` package; the node's bus is
  // machined's own and never asks, so the require stays unresolved and is never reached.
  external: ["x11"],
});
fs.writeFileSync(path.join(outdir, "meta.json"), JSON.stringify(result.metafile));

fs.cpSync(path.join(repo, "agent/api"), path.join(outdir, "api"), {
  recursive: true,
  filter: (src) => fs.statSync(src).isDirectory() || src.endsWith(".proto"),
});

const netlinkDir = path.join(repo, "node_modules/netlink");
fs.mkdirSync(path.join(outdir, "native"));
for (const arch of nativeArchs) {
  fs.copyFileSync(
    path.join(netlinkDir, "prebuilds", `linux-${arch}`, "node.napi.node"),
    path.join(outdir, "native", `netlink-${arch}.node`),
  );
}
// containerd's API subset, found beside the bundle as containerd-api/ (agent/src/sys/containerd/protos.ts).
fs.cpSync(path.join(repo, "agent/containerd-api"), path.join(outdir, "containerd-api"), {
  recursive: true,
  filter: (src) => fs.statSync(src).isDirectory() || src.endsWith(".proto"),
});
// etcd's API subset, found beside the bundle as etcd-api/ (agent/src/sys/etcd/protos.ts).
fs.cpSync(path.join(repo, "agent/etcd-api"), path.join(outdir, "etcd-api"), {
  recursive: true,
  filter: (src) => fs.statSync(src).isDirectory() || src.endsWith(".proto"),
});
// koffi's addon (libc FFI: VT ioctls, disk locks, kexec, gratuitous ARP), loaded as native/koffi-<arch>.node by sys/koffi.ts.
for (const arch of nativeArchs) {
  fs.copyFileSync(
    path.join(repo, "node_modules/koffi/build/koffi", `linux_${arch}`, "koffi.node"),
    path.join(outdir, "native", `koffi-${arch}.node`),
  );
}

const scripts = fs.readdirSync(outdir).filter((f) => f.endsWith(".mjs"));
// V8 holds a module's source in the heap as long as the process runs, one byte a character only while
// every character fits Latin-1: one Greek mu in a regular expression doubled machined's 534 KiB chunk.
for (const f of scripts) {
  const wide = /[^\u0000-\u00ff]/.exec(fs.readFileSync(path.join(outdir, f), "utf8"));
  if (wide)
    throw new Error(
      `${f}: U+${wide[0].codePointAt(0).toString(16).padStart(4, "0")} makes V8 keep this chunk as two-byte text; write it as an escape`,
    );
}
const size = scripts.reduce((sum, f) => sum + fs.statSync(path.join(outdir, f)).size, 0);
console.log(
  `bundle: ${path.relative(repo, outdir)}/basalt.mjs and ${scripts.length - 1} chunks, ${(size / 1024).toFixed(0)} KiB`,
);

/**
 * netlink finds its addon with node-gyp-build(__dirname), which means nothing inside
 * a bundle: load native/netlink-<arch>.node beside basalt.mjs instead (the banner's
 * require resolves relative to the bundle; a variable keeps esbuild from globbing it).
 */
function netlinkAddon() {
  return {
    name: "netlink-addon",
    setup(b) {
      b.onLoad({ filter: /node_modules[\\/]netlink[\\/]dist[\\/]raw\.js$/ }, async (args) => {
        const text = await fs.promises.readFile(args.path, "utf8");
        const call = "require('node-gyp-build')(__dirname + '/..')";
        if (!text.includes(call)) throw new Error(`netlink raw.js no longer loads its addon with ${call}`);
        return {
          contents: text
            .replace(call, "require(__basaltNetlinkAddon)")
            .replace(
              '"use strict";',
              '"use strict";\nconst __basaltNetlinkAddon = "./native/netlink-" + process.arch + ".node";',
            ),
          loader: "js",
        };
      });
    },
  };
}

/**
 * An ESM import of node:http(s) has Node build the module's ESM facade, which reads every export, and
 * the lazy ones (WebSocket, MessageEvent) load undici: ~0.1-0.2 s of CPU on the build host at the start
 * of every agent process, whichever command it runs. Taken through require() (the banner's), the
 * module is used as it is and nothing more loads.
 */
function builtinsThroughRequire() {
  return {
    name: "builtins-through-require",
    setup(b) {
      // The wrapper's own require() must reach Node's module: resolved here again it would be the wrapper
      // itself, whose exports are still {} while it runs (http.request is then not a function).
      b.onResolve({ filter: /^node:https?$/ }, (args) =>
        args.namespace === "builtin-require"
          ? { path: args.path, external: true }
          : { path: args.path, namespace: "builtin-require" },
      );
      b.onLoad({ filter: /.*/, namespace: "builtin-require" }, (args) => ({
        contents: `module.exports = require(${JSON.stringify(args.path)});`,
        loader: "js",
      }));
    },
  };
}
