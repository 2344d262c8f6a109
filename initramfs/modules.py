#!/usr/bin/env python3
"""Resolves initramfs/modules.txt against a kernel's modules.dep.

usage: modules.py <modules-dir> <list> <outdir> [arch]
Copies each module and its dependencies into <outdir>/lib/modules/ (flat) and
writes <outdir>/etc/modules.order, dependencies before dependents, for /init.
Modules built into the kernel (modules.builtin) are skipped silently. A list line
ending in [amd64] or [arm64] counts only for that architecture (default amd64).
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

order, seen = [], set()


def visit(mod):
    if mod in seen:
        return
    seen.add(mod)
    for d in deps.get(mod, []):
        visit(d)
    order.append(mod)


with open(listfile) as f:
    for line in f:
        name, _, tag = line.split("#")[0].strip().partition(" ")
        name = name.replace("-", "_")
        if tag.strip() not in ("", f"[{arch}]"):
            continue
        if not name or name in builtin:
            continue
        if name not in by_name:
            sys.exit(f"modules.py: {name} not found in {moddir}/modules.dep")
        visit(by_name[name])

os.makedirs(os.path.join(outdir, "lib/modules"), exist_ok=True)
os.makedirs(os.path.join(outdir, "etc"), exist_ok=True)
with open(os.path.join(outdir, "etc/modules.order"), "w") as out:
    for mod in order:
        base = os.path.basename(mod)
        shutil.copy2(os.path.join(moddir, mod), os.path.join(outdir, "lib/modules", base))
        out.write(base + "\n")
print(f"modules.py: {len(order)} modules")
