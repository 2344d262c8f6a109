#!/usr/bin/env python3
"""Replaces the full ICU data embedded in npm's Node binary with an English-only subset.

npm's Node is built with full ICU: 33 MB of locale data for every language, linked into .rodata
as the symbol icudt<N>_dat. The agent uses ICU only through the default locale (en-US; init sets no
LANG): String.prototype.localeCompare, Date's time zone names, Unicode normalization and regular
expression property escapes. This keeps what Node's own `small-icu` build keeps (the root and English
locales, every non-locale item: normalization, properties, time zones, plurals, converter aliases)
and drops every other locale's data, the transliterators and the legacy converters but windows-1252
(the WHATWG 'latin1' label). The subset is written where the full data was and the rest of the
symbol's bytes are zeroed, so the binary keeps its size and layout while squashfs compresses the
zeros away.

It fails loudly when anything does not match what it expects: the symbol missing or outside .rodata,
the bytes there not an ICU common-data package, icupkg refusing the subset (it checks that every kept
item's references are kept too), or the subset larger than the original.

usage: rootfs/icu-reduce.py NODE_IN NODE_OUT WORKDIR
"""
import os
import re
import struct
import subprocess
import sys


class IcuReduceError(Exception):
    pass


def symbol(binary: str) -> tuple[str, int, int]:
    """(name, virtual address, size) of the embedded ICU data symbol."""
    out = subprocess.run(["readelf", "-Ws", binary], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and re.fullmatch(r"icudt\d+_dat", f[7]) and f[3] == "OBJECT":
            return f[7], int(f[1], 16), int(f[2], 0)
    raise IcuReduceError(f"{binary}: no icudt<N>_dat symbol (a Node built without embedded full ICU?)")


def file_offset(binary: str, addr: int, size: int) -> int:
    """The file offset of [addr, addr+size) inside .rodata."""
    out = subprocess.run(["readelf", "-SW", binary], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.search(r"\]\s+\.rodata\s+PROGBITS\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            sec_addr, sec_off, sec_size = (int(x, 16) for x in m.groups())
            if not (sec_addr <= addr and addr + size <= sec_addr + sec_size):
                raise IcuReduceError(f"{binary}: the ICU data at {addr:#x} (+{size:#x}) is not inside .rodata")
            return addr - sec_addr + sec_off
    raise IcuReduceError(f"{binary}: no .rodata section")


def items(data: bytes) -> list[str]:
    """The item names (without the package prefix) of an ICU common-data package (little-endian, ASCII: what x86-64 and arm64 use)."""
    header_size, magic1, magic2 = struct.unpack_from("<HBB", data, 0)
    if (magic1, magic2) != (0xDA, 0x27):
        raise IcuReduceError("not ICU data (no 0xda27 header magic)")
    # UDataInfo follows the header's first 4 bytes: size, reserved, isBigEndian, charsetFamily, sizeofUChar,
    # reserved, dataFormat[4], formatVersion[4].
    big_endian, charset = data[8], data[9]
    data_format = data[12:16]
    if big_endian != 0 or charset != 0 or data_format != b"CmnD":
        raise IcuReduceError(f"not a little-endian ASCII common-data package (format {data_format!r})")
    count = struct.unpack_from("<I", data, header_size)[0]
    names = []
    for i in range(count):
        name_off = struct.unpack_from("<I", data, header_size + 4 + 8 * i)[0]
        end = data.index(b"\0", header_size + name_off)
        names.append(data[header_size + name_off:end].decode("ascii").split("/", 1)[1])
    return names


LOCALE = re.compile(r"[a-z]{2,3}(_[A-Za-z0-9]*)*\.res")
# Items of a locale tree that are not a locale although they look like one.
NOT_LOCALES = {"res_index.res", "pool.res", "root.res"}


def keep(item: str) -> bool:
    """Whether an item (without the package prefix) stays in the English-only subset."""
    tree, _, name = item.rpartition("/")
    if tree == "translit":
        return False
    if name.endswith(".cnv"):
        return name == "ibm-5348_P100-1997.cnv"  # windows-1252
    if name in NOT_LOCALES or not LOCALE.fullmatch(name):
        return True
    return name == "en.res" or name.startswith("en_")


def main() -> None:
    node_in, node_out, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    name, addr, size = symbol(node_in)
    offset = file_offset(node_in, addr, size)
    with open(node_in, "rb") as f:
        binary = bytearray(f.read())
    full = bytes(binary[offset:offset + size])
    all_items = items(full)
    package = name.removesuffix("_dat") + "l"  # icudt78l: the little-endian ASCII package name icupkg expects
    removed = [i for i in all_items if not keep(i)]
    full_path = os.path.join(work, "full", f"{package}.dat")
    small_path = os.path.join(work, "small", f"{package}.dat")
    os.makedirs(os.path.dirname(full_path), exist_ok=True)
    os.makedirs(os.path.dirname(small_path), exist_ok=True)
    with open(full_path, "wb") as f:
        f.write(full)
    remove_list = os.path.join(work, "remove.txt")
    with open(remove_list, "w") as f:
        f.write("\n".join(removed) + "\n")
    if os.path.exists(small_path):
        os.remove(small_path)
    subprocess.run(["icupkg", "-r", remove_list, full_path, small_path], check=True)
    with open(small_path, "rb") as f:
        small = f.read()
    kept = items(small)
    if sorted(kept) != sorted(set(all_items) - set(removed)) or len(small) >= size:
        raise IcuReduceError(f"icupkg wrote {len(kept)} items in {len(small)} bytes, expected {len(all_items) - len(removed)} items in under {size}")
    binary[offset:offset + size] = small + bytes(size - len(small))
    with open(node_out, "wb") as f:
        f.write(binary)
    os.chmod(node_out, 0o755)
    print(f"icu-reduce: {name}: {len(all_items)} items, {size} bytes -> {len(kept)} items, {len(small)} bytes (the rest zeroed)")


if __name__ == "__main__":
    try:
        main()
    except (IcuReduceError, subprocess.CalledProcessError) as err:
        print(f"icu-reduce: {err}", file=sys.stderr)
        sys.exit(1)
