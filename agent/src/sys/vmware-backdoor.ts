// VMware's hypervisor backdoor, as a guest reaches it: the hypervisor's CPUID signature, and one
// IN from I/O port 0x5658 with the backdoor's magic in eax and a command in ecx. Everything said
// through it (GETVERSION, RPCI messages) is built above this interface.

import { SystemError } from "../errors.js";
import { locateKernelCalls, type KernelCalls } from "./kernel-calls.js";

export const BACKDOOR_MAGIC = 0x564d5868;
export const BACKDOOR_PORT = 0x5658;

/** The general registers a backdoor call takes and leaves, as unsigned 32-bit numbers. */
export interface BackdoorRegisters {
  eax: number;
  ebx: number;
  ecx: number;
  edx: number;
  esi: number;
  edi: number;
}

export interface VmwareBackdoor {
  /**
   * The hypervisor's CPUID signature (leaf 0x40000000, "VMwareVMware" on VMware), or "" when the
   * CPU says it runs on none (or is not x86).
   */
  hypervisorSignature(): string;
  /** One backdoor call; eax is set to the magic and dx to the port here. */
  call(regs: Omit<BackdoorRegisters, "eax">): BackdoorRegisters;
}

/** The backdoor's port could not be opened (no CAP_SYS_RAWIO, or not x86). */
export class BackdoorAccessError extends SystemError {}

const registerNames = ["eax", "ebx", "ecx", "edx", "esi", "edi"] as const;
const hypervisorPresentBit = 1 << 31;

function cpuid(addon: KernelCalls, leaf: number): Buffer | undefined {
  const regs = Buffer.alloc(16);
  return addon.cpuid(leaf, regs) === 0 ? regs : undefined;
}

/** The backdoor through the project's addon; it loads on first use. */
export function nodeVmwareBackdoor(locate: () => () => KernelCalls = locateKernelCalls): VmwareBackdoor {
  let addon: KernelCalls | undefined;
  const calls = () => (addon ??= locate()());
  return {
    hypervisorSignature() {
      const features = cpuid(calls(), 1);
      if (!features || (features.readUInt32LE(8) & hypervisorPresentBit) === 0) return "";
      const leaf = cpuid(calls(), 0x40000000);
      // ebx, ecx, edx: the signature's twelve characters.
      return leaf ? leaf.subarray(4, 16).toString("latin1").replace(/\0+$/, "") : "";
    },
    call(regs) {
      const buf = Buffer.alloc(24);
      const all: BackdoorRegisters = { ...regs, eax: BACKDOOR_MAGIC, edx: (regs.edx & 0xffff0000) | BACKDOOR_PORT };
      registerNames.forEach((name, i) => buf.writeUInt32LE(all[name] >>> 0, 4 * i));
      const ret = calls().vmwareBackdoor(buf);
      if (ret < 0) throw new BackdoorAccessError("the VMware backdoor port cannot be opened", { errno: -ret });
      const reg = (i: number) => buf.readUInt32LE(4 * i);
      return { eax: reg(0), ebx: reg(1), ecx: reg(2), edx: reg(3), esi: reg(4), edi: reg(5) };
    },
  };
}
