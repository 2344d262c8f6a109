#!/usr/bin/env python3
"""Resolves initramfs/modules.txt against a kernel's modules.dep.

usage: modules.py <modules-dir> <list> <outdir> [arch]
Copies each module and its dependencies into <outdir>/lib/modules/ (flat) and
writes, dependencies before dependents, <outdir>/etc/modules.root (lines tagged
[root] and their dependencies: /init loads them before it mounts the root) and
<outdir>/etc/modules.order (the rest: /init loads them beside machined's start).
Modules built into the kernel (modules.builtin) are skipped silently. A line
tagged [amd64] or [arm64] counts only for that architecture (default amd64).
"""
import os
import shutil
import sys

moddir, listfile, outdir = sys.argv[1:4]
arch = sys.argv[4] if len(sys.argv) > 4 else "amd64"
deps, by_name = {}, {}
with open(os.path.join(moddir, "modules.dep")) as f:
    for line in f:
        mod, _, rest = line.partition(":")
        deps[mod] = rest.split()
        by_name[os.path.basename(mod).split(".ko")[0].replace("-", "_")] = mod
builtin = set()
with open(os.path.join(moddir, "modules.builtin")) as f:
    builtin = {os.path.basename(l.strip()).split(".ko")[0].replace("-", "_") for l in f}


def resolve(names):
    """names and their dependencies, dependencies first."""
    order, seen = [], set()

    def visit(mod):
        if mod in seen:
            return
        seen.add(mod)
        for d in deps.get(mod, []):
            visit(d)
        order.append(mod)

    for name in names:
        visit(by_name[name])
    return order


root_names, other_names = [], []
with open(listfile) as f:
    for line in f:
        words = line.split("#")[0].split()
        if not words:
            continue
        name, tags = words[0].replace("-", "_"), words[1:]
        unknown = [t for t in tags if t not in ("[amd64]", "[arm64]", "[root]")]
        if unknown:
            sys.exit(f"modules.py: {name}: unknown tag {unknown[0]}")
        if any(t in ("[amd64]", "[arm64]") for t in tags) and f"[{arch}]" not in tags:
            continue
        if name in builtin:
            continue
        if name not in by_name:
            sys.exit(f"modules.py: {name} not found in {moddir}/modules.dep")
        (root_names if "[root]" in tags else other_names).append(name)

root = resolve(root_names)
others = [m for m in resolve(other_names) if m not in set(root)]
os.makedirs(os.path.join(outdir, "lib/modules"), exist_ok=True)
os.makedirs(os.path.join(outdir, "etc"), exist_ok=True)
for listname, mods in (("modules.root", root), ("modules.order", others)):
    with open(os.path.join(outdir, "etc", listname), "w") as out:
        for mod in mods:
            base = os.path.basename(mod)
            shutil.copy2(os.path.join(moddir, mod), os.path.join(outdir, "lib/modules", base))
            out.write(base + "\n")
print(f"modules.py: {len(root)} modules before the root, {len(others)} beside machined")
