#!/usr/bin/env node
// Checks that agent/src imports point down the layer list and that no module
// imports itself through a cycle. Prints every violation; exits 1 on any.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "agent", "src");

// Lowest first. A module may import from its own layer or any layer below it.
const layers = [
  ["errors.ts", "log.ts", "flags.ts"],
  ["sys"],
  ["api"],
  ["resources"],
  ["config", "pki"],
  ["controllers", "services", "storage", "network", "oci"],
  ["grpc"],
  ["machined", "apid", "trustd"],
  ["client"],
  ["cmd"],
];

function layerOf(rel) {
  const top = rel.split(path.sep)[0];
  const i = layers.findIndex((names) => names.includes(top));
  return i;
}

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (p.endsWith(".ts") && !p.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

const importRe =
  /^\s*(?:import|export)\s[^'"]*?from\s+["'](\.[^"']+)["']|^\s*import\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/gm;

const problems = [];
const graph = new Map();
for (const file of walk(root)) {
  const rel = path.relative(root, file);
  const from = layerOf(rel);
  if (from < 0) problems.push(`${rel}: not in any layer (add its folder to scripts/check-layers.mjs)`);
  const deps = [];
  const text = readFileSync(file, "utf8");
  for (const m of text.matchAll(importRe)) {
    const spec = m[1] ?? m[2] ?? m[3];
    const target = path.resolve(path.dirname(file), spec).replace(/\.js$/, ".ts");
    const targetRel = path.relative(root, target);
    if (targetRel.startsWith("..")) continue;
    // Dynamic imports in cmd/main.ts pick a process; they are not layering.
    const dynamic = m[3] !== undefined;
    deps.push({ target, dynamic });
    const to = layerOf(targetRel);
    if (from >= 0 && to > from)
      problems.push(`${rel} imports ${targetRel}: ${layers[to].join("/")} is above ${layers[from].join("/")}`);
  }
  graph.set(
    file,
    deps.filter((d) => !d.dynamic).map((d) => d.target),
  );
}

// Cycle detection (static imports only).
const state = new Map();
const stack = [];
function visit(f) {
  state.set(f, 1);
  stack.push(f);
  for (const d of graph.get(f) ?? []) {
    if (!graph.has(d)) continue;
    if (state.get(d) === 1) {
      const cycle = stack
        .slice(stack.indexOf(d))
        .concat(d)
        .map((p) => path.relative(root, p));
      problems.push(`import cycle: ${cycle.join(" -> ")}`);
    } else if (!state.has(d)) visit(d);
  }
  stack.pop();
  state.set(f, 2);
}
for (const f of graph.keys()) if (!state.has(f)) visit(f);

if (problems.length > 0) {
  for (const p of problems) console.error(`check-layers: ${p}`);
  process.exit(1);
}
console.log(`check-layers: ${graph.size} modules, layers and cycles clean`);
