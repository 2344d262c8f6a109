// The project's addon for the kernel calls Node has no API for (agent/native/kernel-calls.c, built by
// scripts/build-native.sh as native/kernel-calls-<arch>.node): beside the bundle's chunks in the image, beside the entry script
// (dist/agent/src/cmd) in dist.

import { locateAddon } from "./addon.js";

/** The addon's calls; each fills the caller's Buffer and returns the call's result or -errno. */
export interface KernelCalls {
  /** adjtimex(2) on a struct timex: the clock state (0..5) or -errno. */
  adjtimex(timex: Buffer): number;
  /** clock_gettime(2) into a struct timespec: 0 or -errno. */
  clockGettime(clockId: number, timespec: Buffer): number;
  /** The RTC_SET_TIME ioctl on an open RTC with a struct rtc_time: 0 or -errno. */
  rtcSetTime(fd: number, rtcTime: Buffer): number;
  /** The VT_ACTIVATE ioctl on a terminal: 0 or -errno. */
  vtActivate(fd: number, tty: number): number;
  /** The TIOCLINUX ioctl, its subcode and arguments in `args`: 0 or -errno. */
  ttyLinux(fd: number, args: Buffer): number;
  /** The TIOCGWINSZ ioctl into a struct winsize: 0 or -errno. */
  ttyWinsize(fd: number, winsize: Buffer): number;
  /** Sends `payload` to the Ethernet broadcast address of link `ifindex` (a packet socket of `ethertype`): the bytes sent or -errno. */
  packetBroadcast(ifindex: number, ethertype: number, payload: Buffer): number;
  /** pipe2(2) with O_CLOEXEC into an int[2] (read end, write end): 0 or -errno. */
  pipe(fds: Buffer): number;
  /**
   * sendmsg(2) of `data` on a connected Unix stream socket without blocking, the fds in `fds` (an int
   * array, at most 16) as SCM_RIGHTS: the bytes sent (the fds went with the first of them) or -errno.
   */
  sendFds(fd: number, data: Buffer, fds: Buffer): number;
  /** socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0), queueing nothing until bound: the fd or -errno. */
  packetSocket(): number;
  /** SO_ATTACH_FILTER with a struct sock_filter array (at least one instruction): 0 or -errno. */
  attachFilter(fd: number, program: Buffer): number;
  /** PACKET_ADD_MEMBERSHIP of `type` (PACKET_MR_*) on link `ifindex`: 0 or -errno. */
  packetMembership(fd: number, ifindex: number, type: number): number;
  /** bind(2) of a packet socket to link `ifindex` for `protocol` (ETH_P_*): 0 or -errno. */
  packetBind(fd: number, ifindex: number, protocol: number): number;
  /** CPUID of `leaf` (subleaf 0) into a uint32[4] (eax, ebx, ecx, edx): 0, or -ENOSYS off x86. */
  cpuid(leaf: number, regs: Buffer): number;
  /**
   * One IN from VMware's backdoor port with the registers of a uint32[6] (eax, ebx, ecx, edx, esi,
   * edi), written back as it leaves them: 0, or -errno (-ENOSYS off x86). Only for a VMware guest.
   */
  vmwareBackdoor(regs: Buffer): number;
}

/** Where the addon is, found without loading it (it loads on first use); throws what both places answered. */
export function locateKernelCalls(): () => KernelCalls {
  return locateAddon<KernelCalls>(
    [`./native/kernel-calls-${process.arch}.node`, `../cmd/native/kernel-calls-${process.arch}.node`],
    "the kernel-calls addon is not available",
  );
}
