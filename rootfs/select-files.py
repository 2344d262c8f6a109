#!/usr/bin/env python3
"""Copies the files a Basalt node needs from the mkosi base tree into a new tree.

Whitelist, not blacklist: start from the packages the node uses (ROOTS), follow
their Depends/Pre-Depends through dpkg's status file, never entering packages
the node must not carry (no shell, package manager, init system, dbus, python,
perl), and copy only the files those packages list, minus docs/man/locales;
of /usr/bin and /usr/sbin only the programs rootfs/programs.txt lists, and of the
shared libraries only those the kept programs need. Kernel modules are only those
rootfs/kernel-modules.txt names, and GRUB modules only those rootfs/grub-modules.txt
names, each with what they depend on. Every ELF file's shared
libraries are checked to be present afterwards, so a wrong exclusion fails the
build instead of the boot.

usage: select-files.py [--arch amd64|arm64] [--needs <elf>]... <base-tree> <out-tree>
       (--needs: a binary added to the tree later, node, whose libraries must be kept)
       select-files.py [--arch amd64|arm64] --roots   (prints ROOTS for the architecture)
       select-files.py [--arch amd64|arm64] --modules <base-tree>   (prints the modules taken)
"""
import fnmatch
import os
import re
import shutil
import stat
import subprocess
import sys

# Debian architecture -> multiarch triplet (library directories).
TRIPLETS = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}
ARCH = "amd64"

COMMON_ROOTS = [
    "kmod", "containerd", "runc", "xfsprogs", "dosfstools",
    "util-linux", "mount", "iproute2", "ca-certificates", "tzdata",
    "libc6", "libstdc++6", "libgcc-s1",  # the Node runtime links these
    "grub2-common",  # install to disk: grub-install, grub-mkimage
    "mtools",  # install to disk: the EFI loader is copied onto the EFI partition without mounting it
    "udev",  # the udevd service (udevadm run as systemd-udevd) and its rules
]
ARCH_ROOTS = {
    "amd64": ["linux-image-amd64", "grub-pc-bin", "grub-efi-amd64-bin"],  # GRUB for BIOS and UEFI
    "arm64": ["linux-image-arm64", "grub-efi-arm64-bin"],  # arm64 boots UEFI only
}


def roots():
    return COMMON_ROOTS + ARCH_ROOTS[ARCH]

# Never entered while following dependencies (and so never copied).
EXCLUDED_PACKAGES = [
    "systemd*", "libsystemd-shared", "dbus*", "libpam-systemd",
    "python3*", "libpython3*", "perl*", "libperl*",
    "bash", "dash", "sh", "busybox*", "coreutils", "debianutils",
    "apt", "dpkg", "debconf*", "adduser", "passwd", "login", "base-passwd",
    "initramfs-tools*", "linux-initramfs-tool", "klibc-utils", "libklibc",
    "sensible-utils", "lsb-base", "sysvinit-utils", "init-system-helpers",
    "openssl", "cpio", "zstd", "gzip", "tar", "sed", "grep", "findutils",
    "procps", "logsave", "e2fsprogs", "readline-common", "media-types",
    "python3-*", "xz-utils", "libdebconfclient0",
    "libicu72",  # only xfs_scrub uses it (32 MiB)
]

# udev: a node keeps Debian's 50-udev-default, 60-block, 60-cdrom_id, 60-persistent-storage (/dev/disk/by-*),
# 75-net-description (net_id: the names 80-net-name-slot gives), 80-drivers (modules for new devices) and the
# device-mapper rules; the others (input, sound, video, seats, sensors, serial, firmware, hwclock, ...) only cost
# every device a pass through them at udevd's first trigger (issue 16, session 7).
UDEV_DROPPED = [
    "rules.d/50-firmware.rules", "rules.d/60-autosuspend.rules", "rules.d/60-drm.rules", "rules.d/60-evdev.rules",
    "rules.d/60-fido-id.rules", "rules.d/60-infiniband.rules", "rules.d/60-input-id.rules",
    "rules.d/60-persistent-alsa.rules", "rules.d/60-persistent-input.rules", "rules.d/60-persistent-storage-tape.rules",
    "rules.d/60-persistent-v4l.rules", "rules.d/60-sensor.rules", "rules.d/60-serial.rules", "rules.d/64-btrfs.rules",
    "rules.d/70-*.rules", "rules.d/71-seat.rules", "rules.d/73-*.rules", "rules.d/75-probe_mtd.rules",
    "rules.d/78-sound-card.rules", "rules.d/80-debian-compat.rules", "rules.d/80-net-setup-link.rules",
    "rules.d/81-net-dhcp.rules", "rules.d/85-hwclock.rules", "rules.d/99-systemd.rules",
    "fido_id", "v4l_id", "mtd_probe", "dmi_memory_id", "hwclock-set",
]

# Files never copied, whatever package lists them (globs on the path).
EXCLUDED_PATHS = [
    "/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*",
    "/usr/share/lintian/*", "/usr/share/bug/*", "/usr/share/bash-completion/*",
    "/usr/share/zsh/*", "/usr/share/fish/*", "/usr/share/common-licenses/*",
    "/usr/share/i18n/*", "/usr/share/menu/*", "/usr/share/initramfs-tools/*",
    "/usr/lib/@TRIPLET@/gconv/*", "/usr/lib/locale/*", "/usr/share/pkgconfig/*",
    "/usr/include/*", "/etc/cron*", "/etc/logrotate.d/*", "/etc/init.d/*",
    "/etc/kernel/*", "/usr/share/zoneinfo/right/*", "/usr/share/zoneinfo/posix/*",
    "/lib/systemd/*", "/usr/lib/systemd/*", "/etc/systemd/*",
    # udev: no hwdb on a server node (keyboard maps, USB names); no initramfs hooks
    "/lib/udev/hwdb.d/*", "/usr/lib/udev/hwdb.d/*",
    # udev rules and helpers a node does without (UDEV_DROPPED, below), under /lib (udev) and /usr/lib (util-linux)
    *[f"{d}/udev/{name}" for d in ("/lib", "/usr/lib") for name in UDEV_DROPPED],
    "/usr/lib/tmpfiles.d/*", "/usr/lib/sysusers.d/*", "/usr/share/lintian*",
    "/boot/*", "/vmlinuz*", "/initrd.img*",
    # containerd: no ctr on a node, no v1 shims
    "/usr/bin/ctr", "/usr/bin/containerd-shim", "/usr/bin/containerd-shim-runc-v1",
    "/usr/bin/containerd-stress",
    # xfsprogs scripts that need a shell or python
    "/usr/sbin/xfs_scrub", "/usr/sbin/xfs_scrub_all", "/usr/sbin/fsck.xfs", "/usr/sbin/xfs_admin", "/usr/sbin/xfs_bmap",
    "/usr/sbin/xfs_freeze", "/usr/sbin/xfs_info", "/usr/sbin/xfs_mkfile", "/usr/sbin/xfs_ncheck",
    "/usr/lib/@TRIPLET@/xfsprogs/*",
    # util-linux/kmod/iproute2 pieces that are shell scripts
    "/usr/lib/@TRIPLET@/tc/q_atm.so",
    "/usr/sbin/lsmod*", "/usr/bin/lsmod", "/usr/sbin/ip-netns*", "/usr/sbin/routel", "/usr/bin/routel",
    # GRUB: machined renders grub.cfg itself; the shell-script generators and tools a node never runs stay out
    "/etc/grub.d/*", "/usr/sbin/grub-mkconfig", "/usr/sbin/update-grub*", "/usr/sbin/grub-reboot",
    "/usr/sbin/grub-set-default", "/usr/bin/grub-mkrescue", "/usr/bin/grub-mount", "/usr/bin/grub-fstest",
    "/usr/bin/grub-kbdcomp", "/usr/share/grub/*.pf2", "/usr/lib/grub/*/*.mod.sig",
    "/usr/lib/grub/*-efi/monolithic/*", "/usr/sbin/grub-macbless", "/usr/sbin/grub-ofpathname",
    "/usr/sbin/grub-sparc64-setup", "/usr/bin/grub-render-label", "/usr/bin/grub-file", "/usr/bin/grub-syslinux2cfg",
    "/usr/bin/grub-mkstandalone", "/usr/bin/grub-mknetdir", "/usr/bin/grub-mkfont", "/usr/bin/grub-script-check",
    "/usr/bin/grub-mkpasswd-pbkdf2", "/usr/bin/grub-mklayout", "/usr/bin/grub-glue-efi", "/usr/bin/grub-menulst2cfg",
    # grub-install links its BIOS set-up code; it runs no helper (strace -f -e execve of an i386-pc install)
    "/usr/lib/grub/*/grub-bios-setup", "/usr/lib/grub/*/grub-ntldr-img",
    # the certificates one by one: /etc/ssl/certs/ca-certificates.crt holds them all
    "/usr/share/ca-certificates/*",
    # other packages' hook files (gdb, apport, Java, Maven, Perl, doc-base)
    "/usr/share/gcc/*", "/usr/share/gdb/*", "/usr/share/apport/*", "/usr/share/java/*", "/usr/share/maven-repo/*",
    "/usr/share/perl5/*", "/usr/share/doc-base/*",
    # time zones: the node runs in UTC (/etc/localtime); node carries its own zone data (ICU), containers theirs
    "/usr/share/zoneinfo/*",
]

def parse_status(path):
    pkgs, cur = {}, {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f.read().split("\n") + [""]:
            if not line.strip():
                if "Package" in cur and "installed" in cur.get("Status", ""):
                    pkgs[cur["Package"]] = cur
                cur, key = {}, None
            elif line[0] in " \t":
                continue
            elif ":" in line:
                key, val = line.split(":", 1)
                cur[key] = val.strip()
    return pkgs


def provides_index(pkgs):
    idx = {}
    for name, p in pkgs.items():
        idx.setdefault(name, name)
        for prov in p.get("Provides", "").split(","):
            prov = re.sub(r"\(.*\)", "", prov).strip()
            if prov:
                idx.setdefault(prov, name)
    return idx


def excluded(name):
    return any(fnmatch.fnmatch(name, g) for g in EXCLUDED_PACKAGES)


def closure(pkgs):
    idx = provides_index(pkgs)
    todo, seen = roots(), set()
    while todo:
        name = todo.pop()
        real = idx.get(name)
        if real is None or real in seen or excluded(real):
            continue
        seen.add(real)
        p = pkgs[real]
        for field in ("Pre-Depends", "Depends"):
            for alt in p.get(field, "").split(","):
                for choice in alt.split("|"):
                    dep = re.sub(r"\(.*\)|:any|:" + ARCH, "", choice).strip()
                    if dep and idx.get(dep) and not excluded(idx[dep]):
                        todo.append(dep)
                        break
    return sorted(seen)


def package_files(base, name):
    info = os.path.join(base, "var/lib/dpkg/info")
    for cand in (f"{name}.list", f"{name}:{ARCH}.list"):
        p = os.path.join(info, cand)
        if os.path.exists(p):
            with open(p) as f:
                return [l.rstrip("\n") for l in f if l.strip() and l.strip() != "/."]
    return []


# Kept although a glob above excludes their directory. mtools converts FAT short names through
# glibc's iconv with code page 850 (install writes the EFI loader with mcopy).
KEPT_PATHS = [
    "/usr/lib/@TRIPLET@/gconv/IBM850.so", "/usr/lib/@TRIPLET@/gconv/gconv-modules",
    "/usr/lib/@TRIPLET@/gconv/gconv-modules.cache", "/usr/lib/@TRIPLET@/gconv/gconv-modules.d",
    "/usr/lib/@TRIPLET@/gconv/gconv-modules.d/*",
    "/usr/share/zoneinfo/Etc/UTC",  # /etc/localtime points here
]


def for_arch(globs):
    return [g.replace("@TRIPLET@", TRIPLETS[ARCH]) for g in globs]


MODULE_LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel-modules.txt")
MODULE_FILE = re.compile(r"^/(?:usr/)?lib/modules/[^/]+/kernel/(.+\.ko(?:\.[a-z]+)?)$")


def module_patterns():
    """The lines of kernel-modules.txt that count for ARCH."""
    with open(MODULE_LIST) as f:
        for line in f:
            pattern, _, tag = line.split("#")[0].strip().partition(" ")
            if pattern and tag.strip() in ("", f"[{ARCH}]"):
                yield pattern


def chosen_modules(base):
    """Paths under kernel/ of the listed modules and of the modules they need (modules.dep, modules.softdep)."""
    moddir = os.path.join(base, "usr/lib/modules")
    moddir = os.path.join(moddir, sorted(os.listdir(moddir))[0])
    deps, by_name = {}, {}
    with open(os.path.join(moddir, "modules.dep")) as f:
        for line in f:
            mod, _, rest = line.partition(":")
            mod = mod.removeprefix("kernel/")
            deps[mod] = [d.removeprefix("kernel/") for d in rest.split()]
            by_name[os.path.basename(mod).split(".ko")[0].replace("-", "_")] = mod
    softdeps = {}
    with open(os.path.join(moddir, "modules.softdep")) as f:
        for line in f:
            words = line.split()
            if words[:1] == ["softdep"] and len(words) > 2:
                softdeps[words[1].replace("-", "_")] = [w.replace("-", "_") for w in words[2:] if not w.endswith(":")]
    chosen, unmatched = set(), []

    def take(mod):
        if mod in chosen:
            return
        chosen.add(mod)
        for dep in deps[mod]:
            take(dep)
        for name in softdeps.get(os.path.basename(mod).split(".ko")[0].replace("-", "_"), []):
            if name in by_name:
                take(by_name[name])

    def matching(pattern):
        return [m for m in deps if (m.startswith(pattern) if pattern.endswith("/") else fnmatch.fnmatch(m, pattern))]

    patterns = list(module_patterns())
    left_out = set()
    for pattern in (p[1:] for p in patterns if p.startswith("!")):
        hits = matching(pattern)
        if not hits:
            unmatched.append("!" + pattern)
        left_out.update(hits)
    for pattern in (p for p in patterns if not p.startswith("!")):
        hits = matching(pattern)
        if not hits:
            unmatched.append(pattern)
        for mod in hits:
            if mod not in left_out:
                take(mod)
    if unmatched:
        sys.exit(f"select-files: {MODULE_LIST} lines that match no {ARCH} module:\n  " + "\n  ".join(unmatched))
    return chosen


MODULES = set()  # chosen_modules() of the base tree, set by main()

PROGRAM_LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs.txt")
PROGRAM_DIRS = ("/usr/bin/", "/usr/sbin/")


def usr_path(path):
    """A package's /bin/x or /sbin/x as the merged-/usr tree holds it."""
    return "/usr" + path if path.startswith(("/bin/", "/sbin/")) else path


def kept_programs():
    """The paths rootfs/programs.txt lists."""
    with open(PROGRAM_LIST) as f:
        lines = [line.split("#")[0].strip() for line in f]
    return {usr_path(p) for p in for_arch(p for p in lines if p)}


PROGRAMS = set()  # kept_programs(), set by main()

GRUB_LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grub-modules.txt")
GRUB_MODULE = re.compile(r"^/usr/lib/grub/([^/]+)/([^/]+)\.mod$")


def grub_modules(base):
    """{platform: module names}: the modules grub-modules.txt names and what they need, per platform
    directory of the base tree's /usr/lib/grub."""
    wanted = []
    with open(GRUB_LIST) as f:
        for line in f:
            name, _, tag = line.split("#")[0].strip().partition(" ")
            if name and tag.strip() in ("", f"[{ARCH}]"):
                wanted.append(name)
    grub, kept, known = os.path.join(base, "usr/lib/grub"), {}, set()
    for platform in sorted(os.listdir(grub)) if os.path.isdir(grub) else []:
        moddep = os.path.join(grub, platform, "moddep.lst")
        if not os.path.exists(moddep):
            continue
        deps = {}
        with open(moddep) as f:
            for line in f:
                name, _, rest = line.partition(":")
                deps[name.strip()] = rest.split()
        known.update(deps)
        todo, kept[platform] = [w for w in wanted if w in deps], set()
        while todo:
            name = todo.pop()
            if name not in kept[platform]:
                kept[platform].add(name)
                todo += deps.get(name, [])
    unknown = [w for w in wanted if w not in known]
    if unknown:
        sys.exit(f"select-files: {GRUB_LIST} names modules no GRUB platform has: {' '.join(unknown)}")
    return kept


GRUB_MODULES = {}  # grub_modules() of the base tree, set by main()


def path_excluded(path):
    m = MODULE_FILE.match(path)
    if m:
        return m.group(1) not in MODULES
    if any(fnmatch.fnmatch(path, g) or path == g for g in for_arch(KEPT_PATHS)):
        return False
    if usr_path(path).startswith(PROGRAM_DIRS) and usr_path(path) not in PROGRAMS:
        return True
    m = GRUB_MODULE.match(usr_path(path))
    if m and m.group(2) not in GRUB_MODULES.get(m.group(1), set()):
        return True
    if any(fnmatch.fnmatch(path, g) or path == g.rstrip("/*") for g in for_arch(EXCLUDED_PATHS)):
        return True
    return False


def copy_entry(base, out, path):
    src = base + path
    if not os.path.lexists(src):
        return
    # Debian bookworm is merged-/usr: /lib, /bin, /sbin are symlinks into /usr.
    dst = out + path
    st = os.lstat(src)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if stat.S_ISDIR(st.st_mode):
        os.makedirs(dst, exist_ok=True)
    elif not os.path.lexists(dst):
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)


def elf_needed(path):
    """The shared libraries an ELF file names (NEEDED) and its program interpreter, if any."""
    try:
        out = subprocess.run(["readelf", "-d", "-l", "-W", path], capture_output=True, text=True).stdout
    except OSError:
        return []
    return re.findall(r"\(NEEDED\).*\[(.+)\]", out) + re.findall(r"Requesting program interpreter: (.+)\]", out)


def is_elf(path):
    if os.path.islink(path) or not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def merged(path):
    """A path as merged-/usr holds it (/lib/x -> /usr/lib/x)."""
    for top in ("/bin/", "/sbin/", "/lib/", "/lib64/"):
        if path.startswith(top):
            return "/usr" + path
    return path


def link_chain(out, rel):
    """rel and every path its symlinks lead through, inside the tree."""
    chain = [rel]
    while os.path.islink(out + rel) and len(chain) < 16:
        target = os.readlink(out + rel)
        rel = merged(os.path.normpath(target if target.startswith("/") else os.path.join(os.path.dirname(rel), target)))
        chain.append(rel)
    return chain


def prune_libraries(out, later_elves):
    """Drops the shared libraries under /usr/lib/TRIPLET that no kept ELF file needs (NEEDED and the program
    interpreter, transitively), nor programs.txt lists; later_elves are files image.sh adds afterwards (node)."""
    libroot = "/usr/lib/" + TRIPLETS[ARCH]
    libdirs = [libroot, "/usr/lib", "/usr/lib64"]
    libraries, todo = set(), []
    for root, _, files in os.walk(out):
        rel_root = root[len(out):]
        if "/lib/modules" in rel_root:
            continue
        for fn in files:
            rel = os.path.join(rel_root, fn)
            if rel.startswith(libroot + "/") and not rel.startswith(libroot + "/gconv/"):
                libraries.add(rel)
            elif is_elf(out + rel):
                todo.append(out + rel)
    todo += later_elves
    kept = {p for p in PROGRAMS if p in libraries}
    todo += [out + p for p in kept]
    seen = set()
    while todo:
        elf = todo.pop()
        if elf in seen:
            continue
        seen.add(elf)
        for name in elf_needed(elf):
            cands = [merged(name)] if name.startswith("/") else [d + "/" + name for d in libdirs]
            for cand in cands:
                if os.path.lexists(out + cand):
                    chain = link_chain(out, cand)
                    kept.update(chain)
                    todo.append(out + chain[-1])
                    break
    dropped = sorted(libraries - kept)
    size = sum(os.lstat(out + p).st_size for p in dropped)
    for p in dropped:
        os.remove(out + p)
    for root, dirs, _ in os.walk(out + libroot, topdown=False):  # plugin directories left empty
        for d in dirs:
            if not os.listdir(os.path.join(root, d)):
                os.rmdir(os.path.join(root, d))
    print(f"select-files: {len(dropped)} libraries no kept program needs dropped ({size} bytes)")


def check_libraries(out, later_elves):
    libdirs = ["/usr/lib/" + TRIPLETS[ARCH], "/usr/lib", "/usr/lib64"]
    elves = list(later_elves)
    for root, _, files in os.walk(out):
        if "/lib/modules" not in root:
            elves += [p for p in (os.path.join(root, fn) for fn in files) if is_elf(p)]
    missing = []
    for p in elves:
        for lib in elf_needed(p):
            found = os.path.lexists(out + merged(lib)) if lib.startswith("/") else any(os.path.lexists(out + d + "/" + lib) for d in libdirs)
            if not found:
                missing.append(f"{p[len(out):] if p.startswith(out) else p} needs {lib}")
    return missing


def main():
    global ARCH
    args = sys.argv[1:]
    if args[:1] == ["--arch"]:
        ARCH, args = args[1], args[2:]
        if ARCH not in TRIPLETS:
            sys.exit(f"select-files: unknown architecture {ARCH}")
    if args == ["--roots"]:
        print(" ".join(roots()))
        return
    if args[:1] == ["--modules"]:
        print("\n".join(sorted(chosen_modules(args[1]))))
        return
    later_elves = []
    while args[:1] == ["--needs"]:
        later_elves.append(args[1])
        args = args[2:]
    base, out = args
    MODULES.update(chosen_modules(base))
    PROGRAMS.update(kept_programs())
    GRUB_MODULES.update(grub_modules(base))
    pkgs = parse_status(os.path.join(base, "var/lib/dpkg/status"))
    chosen = closure(pkgs)
    print("select-files: packages:", " ".join(chosen))
    os.makedirs(out, exist_ok=True)
    for top in ("bin", "sbin", "lib", "lib64"):  # merged-/usr symlinks
        os.makedirs(os.path.join(out, "usr", top), exist_ok=True)
        src = os.path.join(base, top)
        if os.path.islink(src) and not os.path.lexists(os.path.join(out, top)):
            os.symlink(os.readlink(src), os.path.join(out, top))
    for name in chosen:
        for path in package_files(base, name):
            if not path_excluded(path):
                copy_entry(base, out, path)
    # Files maintainer scripts generate (not in any package list).
    for path in ("/etc/ssl/certs/ca-certificates.crt", "/etc/ld.so.cache", "/etc/passwd", "/etc/group",
                 "/etc/nsswitch.conf", "/etc/localtime", "/etc/timezone"):
        copy_entry(base, out, path)
    prune_libraries(out, later_elves)
    missing = check_libraries(out, later_elves)
    if missing:
        sys.exit("select-files: missing shared libraries:\n  " + "\n  ".join(missing))


if __name__ == "__main__":
    main()
