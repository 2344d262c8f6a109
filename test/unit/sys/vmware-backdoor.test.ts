// CPUID through the kernel-calls addon on this host, for real, against what the kernel read of it
// (/proc/cpuinfo). The backdoor's port itself is left alone: outside VMware it is whatever the bus has.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { locateKernelCalls } from "../../../agent/src/sys/kernel-calls.js";
import { nodeVmwareBackdoor } from "../../../agent/src/sys/vmware-backdoor.js";

const x86 = process.arch === "x64";
const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
const cpuinfoField = (name: string) => new RegExp(`^${name}\\s*: (.*)$`, "m").exec(cpuinfo)?.[1] ?? "";

test("cpuid leaf 0 names the CPU's vendor as the kernel does", { skip: x86 ? false : "x86 only" }, () => {
  const regs = Buffer.alloc(16);
  assert.equal(locateKernelCalls()().cpuid(0, regs), 0);
  // The vendor string is ebx, edx, ecx.
  const vendor = Buffer.concat([regs.subarray(4, 8), regs.subarray(12, 16), regs.subarray(8, 12)]).toString("latin1");
  assert.equal(vendor, cpuinfoField("vendor_id"));
});

test("the hypervisor's signature is there exactly when the kernel saw the hypervisor bit", () => {
  const signature = nodeVmwareBackdoor().hypervisorSignature();
  const hypervisor = cpuinfoField("flags").split(" ").includes("hypervisor");
  if (hypervisor) assert.match(signature, /^[\x20-\x7e]{1,12}$/);
  else assert.equal(signature, "");
});

test("the backdoor call refuses a register buffer that is too short, before any port is touched", () => {
  assert.throws(() => locateKernelCalls()().vmwareBackdoor(Buffer.alloc(20)), TypeError);
});
