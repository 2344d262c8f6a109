#!/usr/bin/env python3
"""Blanks the dynamic symbols npm's Node exports that nothing on the image can look up.

npm's Node is linked with --export-dynamic: its .dynsym holds ~90,000 symbols (V8, OpenSSL, ICU, libuv,
Node's C++ internals) and .dynstr 7.8 MB of their mangled names, about 2 MB of the squashfs once
compressed. The dynamic linker looks a symbol of the executable up only for another object loaded in
the same process: the image's shared libraries (interposition) and the agent's addons, which reach Node
only through Node-API and libuv (napi_*, node_api_*, uv_*; image.sh checks every addon against the result).

Kept: every undefined symbol (Node's own imports), every symbol a relocation of Node's names, Node-API and
libuv, and every name in the dynamic symbol table of a library of the tree that can share Node's process
(interposition): its DT_NEEDED closure and glibc's plug-ins. libcrypto.so.3, which kmod and udev link, cannot:
Node carries its own OpenSSL, whose exports are blanked like the rest. Every other
symbol's entry is zeroed (a zero value and an empty name never match a lookup), its name's bytes in
.dynstr are zeroed unless a kept string shares them, and its .gnu.hash chain value loses all bits but
the end-of-chain one, which a lookup compares first and stops on; the Bloom filter is made again from the
kept names. Nothing moves, so the binary keeps its
size and layout and squashfs compresses the zeros away. What is lost: names in a native backtrace of Node's
own frames (dladdr), which the image has no debugger for anyway.

It fails loudly when the binary is not what it expects: not a 64-bit little-endian ELF, no .dynsym/.dynstr/
.gnu.hash, or no Node-API symbol among the exports.

usage: rootfs/node-exports.py NODE TREE   (NODE is rewritten in place; TREE is the root tree it goes into)
"""
import os
import re
import struct
import sys

ADDON_ABI = re.compile(rb"(napi_|node_api_|uv_)")
SHT_DYNSYM, SHT_RELA, SHT_GNU_HASH, SHT_DYNAMIC = 11, 4, 0x6FFFFFF6, 6
SHT_GNU_VERDEF, SHT_GNU_VERNEED = 0x6FFFFFFD, 0x6FFFFFFE
DT_STRINGS = {1, 14, 15, 29}  # NEEDED, SONAME, RPATH, RUNPATH


class NodeExportsError(Exception):
    pass


class Elf:
    """The sections of a 64-bit little-endian ELF file that dynamic linking reads."""

    def __init__(self, path: str, data: bytes | bytearray):
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise NodeExportsError(f"{path}: not a 64-bit little-endian ELF file")
        self.path, self.data = path, data
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        self.sections = []
        for i in range(shnum):
            _name, typ, _flags, _addr, off, size, link, info = struct.unpack_from("<IIQQQQII", data, shoff + i * shentsize)
            self.sections.append({"type": typ, "offset": off, "size": size, "link": link, "info": info})

    def cstr(self, at: int) -> bytes:
        return bytes(self.data[at:self.data.index(b"\0", at)])

    def of_type(self, typ: int):
        return [s for s in self.sections if s["type"] == typ]

    def dynsym(self):
        """(entry offset, name offset in .dynstr, shndx) of each .dynsym entry."""
        sym = next(iter(self.of_type(SHT_DYNSYM)), None)
        if sym is None:
            return None, []
        strtab = self.sections[sym["link"]]
        entries = []
        for at in range(sym["offset"], sym["offset"] + sym["size"], 24):
            name, _info, _other, shndx = struct.unpack_from("<IBBH", self.data, at)
            entries.append((at, name, shndx))
        return strtab, entries

    def dynamic_names(self) -> set[bytes]:
        strtab, entries = self.dynsym()
        if strtab is None:
            return set()
        return {self.cstr(strtab["offset"] + name) for _at, name, _shndx in entries[1:]}


def needed(elf: Elf) -> list[bytes]:
    strtab, _ = elf.dynsym()
    out = []
    for dyn in elf.of_type(SHT_DYNAMIC):
        for at in range(dyn["offset"], dyn["offset"] + dyn["size"], 16):
            tag, val = struct.unpack_from("<qQ", elf.data, at)
            if tag == 1:
                out.append(elf.cstr(strtab["offset"] + val))
    return out


def read_elf(path: str) -> Elf:
    with open(path, "rb") as fh:
        return Elf(path, fh.read())


def process_names(tree: str, node: Elf) -> set[bytes]:
    """Every dynamic symbol name (defined or not) of the tree's objects that can be loaded into Node's process:
    Node's DT_NEEDED closure (which holds libc, all that the addons and koffi's dlopen("libc.so.6") need) and
    the plug-ins glibc itself dlopens (gconv converters, NSS modules)."""
    lib_dirs = sorted({root for root, _d, files in os.walk(tree) if "libc.so.6" in files})
    if not lib_dirs:
        raise NodeExportsError(f"{tree}: no directory holds libc.so.6")
    todo = [os.path.join(d, f.decode()) for d in lib_dirs for f in needed(node) if os.path.exists(os.path.join(d, f.decode()))]
    for d in lib_dirs:
        for root, _dirs, files in os.walk(d):
            todo += [os.path.join(root, f) for f in files if f.startswith("libnss_") or (root.endswith("gconv") and f.endswith(".so"))]
    seen: set[str] = set()
    names: set[bytes] = set()
    while todo:
        path = os.path.realpath(todo.pop())
        if path in seen:
            continue
        seen.add(path)
        elf = read_elf(path)
        names |= elf.dynamic_names()
        todo += [os.path.join(d, f.decode()) for d in lib_dirs for f in needed(elf) if os.path.exists(os.path.join(d, f.decode()))]
    return names


def string_offsets(elf: Elf) -> list[int]:
    """.dynstr offsets that the dynamic section and the version sections name."""
    out = []
    for dyn in elf.of_type(SHT_DYNAMIC):
        for at in range(dyn["offset"], dyn["offset"] + dyn["size"], 16):
            tag, val = struct.unpack_from("<qQ", elf.data, at)
            if tag in DT_STRINGS:
                out.append(val)
    for need in elf.of_type(SHT_GNU_VERNEED):
        at = need["offset"]
        for _ in range(need["info"]):
            _ver, cnt, file, aux, nxt = struct.unpack_from("<HHIII", elf.data, at)
            out.append(file)
            a = at + aux
            for _ in range(cnt):
                _hash, _flags, _other, name, anext = struct.unpack_from("<IHHII", elf.data, a)
                out.append(name)
                a += anext
            at += nxt
    for vdef in elf.of_type(SHT_GNU_VERDEF):
        at = vdef["offset"]
        for _ in range(vdef["info"]):
            _ver, _flags, _ndx, cnt, _hash, aux, nxt = struct.unpack_from("<HHHHIII", elf.data, at)
            a = at + aux
            for _ in range(cnt):
                name, anext = struct.unpack_from("<II", elf.data, a)
                out.append(name)
                a += anext
            at += nxt
    return out


def relocated_symbols(elf: Elf, dynsym_index: int) -> set[int]:
    out = set()
    for rela in elf.of_type(SHT_RELA):
        if rela["link"] != dynsym_index:
            continue
        for at in range(rela["offset"], rela["offset"] + rela["size"], 24):
            out.add(struct.unpack_from("<Q", elf.data, at + 8)[0] >> 32)
    return out


def gnu_hash_of(name: bytes) -> int:
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


def prune(node: str, tree: str) -> tuple[int, int, int]:
    with open(node, "rb") as fh:
        data = bytearray(fh.read())
    elf = Elf(node, data)
    strtab, entries = elf.dynsym()
    gnu_hash = next(iter(elf.of_type(SHT_GNU_HASH)), None)
    if strtab is None or gnu_hash is None:
        raise NodeExportsError(f"{node}: no .dynsym, .dynstr or .gnu.hash")
    dynsym_index = elf.sections.index(elf.of_type(SHT_DYNSYM)[0])
    others = process_names(tree, elf)
    relocated = relocated_symbols(elf, dynsym_index)
    base = strtab["offset"]

    kept, dropped, abi = set(), [], 0
    for i, (_at, name_off, shndx) in enumerate(entries):
        name = elf.cstr(base + name_off)
        if ADDON_ABI.match(name) and shndx != 0:
            abi += 1
        if i == 0 or shndx == 0 or i in relocated or ADDON_ABI.match(name) or name in others:
            kept.add(i)
        else:
            dropped.append(i)
    if abi == 0:
        raise NodeExportsError(f"{node}: exports no Node-API or libuv symbol (not npm's Node?)")

    keep_bytes = bytearray(strtab["size"])
    for off in [entries[i][1] for i in kept] + string_offsets(elf):
        end = data.index(b"\0", base + off) - base
        keep_bytes[off:end + 1] = b"\1" * (end + 1 - off)
    blanked = 0
    for off in range(strtab["size"]):
        if not keep_bytes[off] and data[base + off]:
            data[base + off] = 0
            blanked += 1
    for i in dropped:
        at = entries[i][0]
        data[at:at + 24] = bytes(24)

    nbuckets, symoffset, bloom_size, shift = struct.unpack_from("<IIII", data, gnu_hash["offset"])
    bloom = gnu_hash["offset"] + 16
    chain = bloom + 8 * bloom_size + 4 * nbuckets
    for i in dropped:
        if i >= symoffset:
            at = chain + 4 * (i - symoffset)
            struct.pack_into("<I", data, at, struct.unpack_from("<I", data, at)[0] & 1)
    # The Bloom filter again, from the kept names alone: a lookup of a blanked name now stops at it.
    words = [0] * bloom_size
    for i in kept:
        if i >= symoffset:
            h = gnu_hash_of(elf.cstr(base + entries[i][1]))
            words[(h // 64) % bloom_size] |= (1 << (h % 64)) | (1 << ((h >> shift) % 64))
    struct.pack_into(f"<{bloom_size}Q", data, bloom, *words)

    with open(node, "r+b") as fh:
        fh.write(data)
    return len(kept), len(dropped), blanked


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        kept, dropped, blanked = prune(sys.argv[1], sys.argv[2])
    except NodeExportsError as e:
        print(f"node-exports: {e}", file=sys.stderr)
        return 1
    print(f"node-exports: {kept} dynamic symbols kept, {dropped} blanked ({blanked} bytes of names zeroed)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
