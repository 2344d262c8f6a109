#!/usr/bin/env bash
# Debian packages the project needs, by area; scripts/setup.sh installs them.
apt_packages=()
# foundation: the sandbox and integration tests
apt_packages+=(iproute2 util-linux)
# networking: integration tests run a real DHCP server
apt_packages+=(dnsmasq)
# containerd: integration tests run Debian's containerd and runc, and pull from Debian's docker-registry
apt_packages+=(containerd runc docker-registry)
# time sync: integration tests serve NTP with chrony (run with -x: it never touches the host clock)
apt_packages+=(chrony)
# image: mkosi base tree, static init, initramfs/ISO assembly, QEMU boots (scripts/image.sh, vm.sh, test/e2e, bench)
apt_packages+=(mkosi debootstrap systemd-container python3 gcc libc6-dev binutils kmod cpio xz-utils zstd squashfs-tools)
apt_packages+=(grub-common grub-pc-bin grub-efi-amd64-bin xorriso mtools dosfstools)
# image: icupkg, to cut the node binary's embedded ICU data to English (rootfs/icu-reduce.py)
apt_packages+=(icu-devtools)
# install to disk: the storage integration test installs onto a loop device
apt_packages+=(grub2-common xfsprogs)
apt_packages+=(qemu-system-x86 qemu-utils ovmf seabios)
# arm64 image (scripts/image.sh --arch arm64, test/e2e/arm64.test.ts): cross compiler for init, QEMU and its
# UEFI firmware; GRUB's arm64 modules come from Debian's arm64 packages (rootfs/foreign-tree.sh adds the architecture)
apt_packages+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross binutils-aarch64-linux-gnu qemu-system-arm qemu-efi-aarch64)
# arm64 image: the arm64 node runs under qemu-user (no binfmt needed) to prove its reduced ICU data
apt_packages+=(qemu-user-static)
# upgrade: a real OCI registry for the installer image (test/integration/oci-registry.test.ts, the upgrade e2e)
apt_packages+=(docker-registry)
# cloud images (scripts/platform-images.sh, test/integration/platform-images.test.ts): qemu-img for qcow2, VHD
# and stream-optimized VMDK; xz, gzip, zstd and GNU tar pack them
apt_packages+=(qemu-utils xz-utils gzip zstd tar)
# cloud platforms: an OpenStack config drive made as nova makes it (test/integration/platform-metadata.test.ts)
apt_packages+=(genisoimage)
# cloud platforms: QEMU relays a guest's metadata connections to the test's service (scripts/vm.sh --metadata-port)
apt_packages+=(socat)
# cloud platforms: the Equinix Metal service's test certificate (openssl) and OpenNebula's context volume
# as ext4 where the kernel reads no ISO 9660 (mkfs.ext4 -d) (test/integration/platform-metadata.test.ts)
apt_packages+=(openssl e2fsprogs)
