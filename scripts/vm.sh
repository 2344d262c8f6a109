#!/usr/bin/env bash
# Boots a Basalt node in QEMU: the ISO (UEFI by default, or legacy BIOS) or the PXE
# kernel+initramfs directly, with a blank 10 GiB virtio disk and user-mode networking
# forwarding the API ports to 127.0.0.1. Builds the image first when it is missing.
#
# usage: scripts/vm.sh [options]
#   --arch amd64|arm64      which image (default amd64; arm64 runs qemu-system-aarch64 -machine virt under TCG, UEFI only)
#   --boot iso|pxe|disk     what to boot (default iso; disk: no CD, the installed disk only)
#   --firmware uefi|bios    firmware for ISO boots (default uefi: OVMF; bios: SeaBIOS)
#   --api-port N            host port forwarded to the node's 50000 (default 50000, env BASALT_VM_API_PORT)
#   --trustd-port N         host port forwarded to the node's 50001 (default 50001, env BASALT_VM_TRUSTD_PORT)
#   --k8s-port N            host port forwarded to the node's Kubernetes API, 6443 (default none)
#   --disk FILE             disk image (default _out/vm-disk.qcow2; created blank, 10 GiB)
#   --fresh-disk            recreate the disk blank
#   --disk-format F         the disk's format as QEMU names it: qcow2 (default), raw, vpc (a VHD), vmdk
#   --disk-bus B            how the disk is attached: virtio (default), nvme (AWS Nitro), virtio-scsi (GCE),
#                           pvscsi (VMware), ide (Azure generation 1)
#   --append "ARGS"         extra kernel arguments for a pxe boot (e.g. talos.config=URL)
#   --uuid UUID             the machine's SMBIOS UUID (QEMU -uuid)
#   --seed FILE             attach FILE read-only as a second virtio disk (e.g. a nocloud cidata image)
#   --cdrom FILE            attach FILE as a CD-ROM (e.g. an OpenStack config drive, a CD as nova attaches it)
#   --reboot                let a guest reboot restart the VM (default: QEMU exits, -no-reboot)
#   --serial FILE           write the console to FILE instead of the terminal (no monitor)
#   --accel auto|kvm|tcg    auto (default) uses KVM only when a probe boot proves it works
#   --memory MiB --cpus N   guest size (default 2048 MiB, 2 vCPUs)
#   --no-build              fail instead of building when the artifacts are missing
#   --net-open              let the guest reach beyond the host (default: QEMU restrict=on,
#                           only the forwarded ports and QEMU's own DHCP/DNS answer)
#   --second-nic            a second virtio NIC on its own isolated user network (10.0.3.0/24)
#   --metadata-port N       a cloud's metadata services: the guest's DHCP address becomes 169.254.2.15 and each
#                           of its TCP connections to 169.254.169.254:80 (the metadata service), 169.254.42.42:80
#                           (Scaleway's) or 168.63.129.16:80 (Azure's wire server) is relayed (socat) to
#                           127.0.0.1:N on the host
# The process execs into QEMU: killing this pid stops the VM.
set -euo pipefail
cd "$(dirname "$0")/.."
out=_out
cache=_out/cache

arch=amd64 boot=iso firmware=uefi serial="" accel=auto memory=2048 cpus=2 build=1 fresh=0 restrict=on reboot=0 second_nic=0
api_port=${BASALT_VM_API_PORT:-50000}
trustd_port=${BASALT_VM_TRUSTD_PORT:-50001}
disk="$out/vm-disk.qcow2"
append="" uuid="" seed="" cdrom="" k8s_port="" disk_format=qcow2 disk_bus=virtio metadata_port=""
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=$2; shift ;;
    --boot) boot=$2; shift ;;
    --firmware) firmware=$2; shift ;;
    --api-port) api_port=$2; shift ;;
    --trustd-port) trustd_port=$2; shift ;;
    --k8s-port) k8s_port=$2; shift ;;
    --disk) disk=$2; shift ;;
    --fresh-disk) fresh=1 ;;
    --disk-format) disk_format=$2; shift ;;
    --disk-bus) disk_bus=$2; shift ;;
    --append) append=$2; shift ;;
    --uuid) uuid=$2; shift ;;
    --seed) seed=$2; shift ;;
    --cdrom) cdrom=$2; shift ;;
    --reboot) reboot=1 ;;
    --serial) serial=$2; shift ;;
    --accel) accel=$2; shift ;;
    --memory) memory=$2; shift ;;
    --cpus) cpus=$2; shift ;;
    --no-build) build=0 ;;
    --net-open) restrict=off ;;
    --second-nic) second_nic=1 ;;
    --metadata-port) metadata_port=$2; shift ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "vm.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
say() { echo "vm: $*" >&2; }

# A fresh machine gets its packages, Node 22 and npm dependencies first (idempotent).
bash scripts/setup.sh >&2

if [ ! -f "$out/metal-$arch.iso" ] || [ ! -f "$out/initramfs-$arch.xz" ] || [ ! -f "$out/vmlinuz-$arch" ]; then
  [ "$build" = 1 ] || { say "artifacts missing under $out (run npm run image -- --arch $arch)"; exit 1; }
  bash scripts/image.sh --arch "$arch"
fi

# KVM only where a probe boot proves it: some hosts expose a /dev/kvm whose guests hang.
kvm_works() {
  [ -r /dev/kvm ] && [ -w /dev/kvm ] || return 1
  local boot_id verdict
  boot_id=$(cat /proc/sys/kernel/random/boot_id)
  verdict="$cache/kvm-probe.$boot_id"  # one verdict per host boot
  [ -f "$verdict" ] && { [ "$(cat "$verdict")" = ok ]; return; }
  # One probe directory per process: the e2e lanes may start two VMs at the same moment.
  local dir="$cache/kvm-probe-run.$$"
  rm -rf "$dir" && mkdir -p "$dir/root/dev"
  gcc -static -Os -o "$dir/root/init" initramfs/kvm-probe.c
  (cd "$dir/root" && find . | cpio -o -H newc -R 0:0 --quiet | gzip -1) >"$dir/probe.cpio.gz"
  say "probing KVM (a guest must power off within 20 s)"
  if timeout 20 qemu-system-x86_64 -accel kvm -m 256 -nographic -no-reboot -serial "file:$dir/serial.log" -monitor none \
      -kernel "$out/vmlinuz-amd64" -initrd "$dir/probe.cpio.gz" -append "console=ttyS0 quiet panic=-1" >/dev/null 2>&1 &&
     grep -q basalt-kvm-probe-ok "$dir/serial.log"; then
    echo ok >"$dir/verdict"
  else
    echo broken >"$dir/verdict"
  fi
  mv -f "$dir/verdict" "$verdict" && rm -rf "$dir"
  find "$cache" -maxdepth 1 -name 'kvm-probe.*-*' ! -name "kvm-probe.$boot_id" -delete
  [ "$(cat "$verdict")" = ok ]
}
case "$arch/$accel" in
  # No KVM for another architecture; cortex-a57 emulates faster under TCG than max (no pointer authentication).
  arm64/*) accel_args=(-accel tcg -cpu cortex-a57) ;;
  amd64/kvm) accel_args=(-accel kvm -cpu host) ;;
  amd64/tcg) accel_args=(-accel tcg -cpu max) ;;
  amd64/auto) if kvm_works; then accel_args=(-accel kvm -cpu host); else accel_args=(-accel tcg -cpu max); fi ;;
  *) say "--arch must be amd64 or arm64, --accel auto, kvm or tcg"; exit 2 ;;
esac
# amd64: q35 with an IDE CD and OVMF; arm64: virt with a virtio-scsi CD and AAVMF (no BIOS).
case "$arch" in
  amd64) qemu=qemu-system-x86_64 machine=q35 cd_dev=ide-cd code_fd=/usr/share/OVMF/OVMF_CODE_4M.fd vars_fd=/usr/share/OVMF/OVMF_VARS_4M.fd ;;
  arm64) qemu=qemu-system-aarch64 machine=virt cd_dev=scsi-cd code_fd=/usr/share/AAVMF/AAVMF_CODE.fd vars_fd=/usr/share/AAVMF/AAVMF_VARS.fd ;;
esac

if [ "$fresh" = 1 ] || [ ! -f "$disk" ]; then
  rm -f "$disk"
  qemu-img create -q -f "$disk_format" "$disk" 10G
fi
# A controller for the buses that need one; the disk is the controller's only device.
case "$disk_bus" in
  virtio) disk_dev=(-device "virtio-blk-pci,drive=disk0,bootindex=2") ;;
  nvme) disk_dev=(-device "nvme,drive=disk0,serial=basalt-disk0,bootindex=2") ;;
  virtio-scsi) disk_dev=(-device virtio-scsi-pci,id=disk-bus -device "scsi-hd,bus=disk-bus.0,drive=disk0,bootindex=2") ;;
  pvscsi) disk_dev=(-device pvscsi,id=disk-bus -device "scsi-hd,bus=disk-bus.0,drive=disk0,bootindex=2") ;;
  ide) disk_dev=(-device "ide-hd,bus=ide.1,drive=disk0,bootindex=2") ;;
  *) say "--disk-bus must be virtio, nvme, virtio-scsi, pvscsi or ide"; exit 2 ;;
esac

# QEMU forwards a guest's connection only to an address inside its user network: 168.0.0.0/7 holds both
# services' addresses. A command per connection, since one character device would carry every connection
# as a single stream.
metadata_net=""
if [ -n "$metadata_port" ]; then
  metadata_net=",net=168.0.0.0/7,host=169.254.2.2,dns=169.254.2.3,dhcpstart=169.254.2.15"
  for service in 169.254.169.254:80 168.63.129.16:80; do
    metadata_net+=",guestfwd=tcp:$service-cmd:socat STDIO TCP:127.0.0.1:$metadata_port"
  done
  # Scaleway answers user data only to a source port below 1024, which a relay cannot pass on: it takes
  # one itself (lowport: root; QEMU reads ",," as a comma). The integration tests check the node's own port.
  metadata_net+=",guestfwd=tcp:169.254.42.42:80-cmd:socat STDIO TCP:127.0.0.1:$metadata_port,,lowport"
fi

args=(-machine "$machine" "${accel_args[@]}" -m "$memory" -smp "$cpus"
  -drive "file=$disk,if=none,id=disk0,format=$disk_format" "${disk_dev[@]}"
  -netdev "user,id=net0,restrict=$restrict,hostfwd=tcp:127.0.0.1:${api_port}-:50000,hostfwd=tcp:127.0.0.1:${trustd_port}-:50001${k8s_port:+,hostfwd=tcp:127.0.0.1:${k8s_port}-:6443}${metadata_net}"
  -device virtio-net-pci,netdev=net0
  -device virtio-rng-pci)
[ "$second_nic" = 1 ] && args+=(-netdev "user,id=net1,restrict=on,net=10.0.3.0/24" -device virtio-net-pci,netdev=net1)
[ "$reboot" = 1 ] || args+=(-no-reboot)
[ -z "$uuid" ] || args+=(-uuid "$uuid")
[ -z "$seed" ] || args+=(-drive "file=$seed,if=none,id=seed0,format=raw,readonly=on" -device virtio-blk-pci,drive=seed0)
case "$boot" in
  iso|disk)
    [ "$arch" = arm64 ] && args+=(-device virtio-scsi-pci,id=scsi0)
    [ "$boot" = iso ] && args+=(-drive "file=$out/metal-$arch.iso,if=none,id=cd0,media=cdrom,readonly=on" -device "$cd_dev,drive=cd0,bootindex=1")
    if [ "$firmware" = uefi ]; then
      vars="$cache/OVMF_VARS.$$.fd"
      mkdir -p "$cache" && cp "$vars_fd" "$vars"
      # QEMU holds the file open; it is removed now so no copy outlives the VM.
      args+=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$code_fd"
        -drive "if=pflash,format=raw,unit=1,file=$vars")
      (sleep 5; rm -f "$vars") &
    elif [ "$firmware" != bios ] || [ "$arch" = arm64 ]; then
      say "--firmware must be uefi or bios (arm64: uefi)"; exit 2
    fi ;;
  pxe)
    args+=(-kernel "$out/vmlinuz-$arch" -initrd "$out/initramfs-$arch.xz" -append "$(cat "$out/cmdline-$arch.txt")${append:+ $append}") ;;
  *) say "--boot must be iso, pxe or disk"; exit 2 ;;
esac
if [ -n "$cdrom" ]; then
  [ "$arch/$boot" = arm64/pxe ] && args+=(-device virtio-scsi-pci,id=scsi0)
  args+=(-drive "file=$cdrom,if=none,id=cd1,media=cdrom,readonly=on" -device "$cd_dev,drive=cd1")
fi
if [ -n "$serial" ]; then
  args+=(-display none -serial "file:$serial" -monitor none)
else
  args+=(-nographic -serial mon:stdio)
fi

cat >&2 <<EOF
vm: booting $arch $boot$( [ "$boot" = iso ] && echo " ($firmware)") with ${accel_args[1]}, disk $disk
vm: the node's API is forwarded to 127.0.0.1:$api_port (trustd 127.0.0.1:$trustd_port). Once it is in maintenance mode:
vm:   talosctl disks --insecure -n 127.0.0.1:$api_port
vm:   talosctl get addresses --insecure -n 127.0.0.1:$api_port
vm:   talosctl apply-config --insecure -n 127.0.0.1:$api_port --file controlplane.yaml
vm: or with our own client (same flags): node _out/bundle/basalt.mjs ctl disks --insecure -n 127.0.0.1:$api_port
vm: console: Ctrl-A X quits QEMU, Ctrl-A C toggles the QEMU monitor.
EOF
exec "$qemu" "${args[@]}"
