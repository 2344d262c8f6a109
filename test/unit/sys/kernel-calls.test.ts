// The kernel-calls addon's terminal ioctls on this host, for real: a pseudo-terminal answers
// TIOCGWINSZ, a regular file answers ENOTTY to every terminal ioctl; a packet socket sends on loopback;
// sendmsg with fds refuses bad arguments and answers the kernel's errno (sent fds: fd-socket.test.ts).
import assert from "node:assert/strict";
import { closeSync, openSync } from "node:fs";
import { test } from "node:test";
import { locateKernelCalls } from "../../../agent/src/sys/kernel-calls.js";

const ENOTTY = 25;

test("the terminal ioctls reach the kernel: a new pty's size fills struct winsize, a file is not a tty", () => {
  const calls = locateKernelCalls()();
  const pty = openSync("/dev/ptmx", "r+");
  try {
    // A new pseudo-terminal is 0 x 0: the kernel writes zeros over the filler.
    const winsize = Buffer.alloc(8, 0xa5);
    assert.equal(calls.ttyWinsize(pty, winsize), 0);
    assert.deepEqual([...winsize], [0, 0, 0, 0, 0, 0, 0, 0]);
  } finally {
    closeSync(pty);
  }
  const file = openSync("/proc/self/stat", "r");
  try {
    assert.equal(calls.ttyWinsize(file, Buffer.alloc(8)), -ENOTTY);
    assert.equal(calls.vtActivate(file, 2), -ENOTTY);
    assert.equal(calls.ttyLinux(file, Buffer.from([11, 1])), -ENOTTY);
  } finally {
    closeSync(file);
  }
  assert.throws(
    () => calls.ttyWinsize(0, Buffer.alloc(4)),
    TypeError,
    "a buffer shorter than struct winsize is refused",
  );
});

test("packetBroadcast sends through a real packet socket: all bytes on loopback, ENXIO for a link that does not exist", {
  skip: process.getuid?.() === 0 ? false : "needs CAP_NET_RAW (root)",
}, () => {
  const calls = locateKernelCalls()();
  const payload = Buffer.from("a frame's content after the Ethernet header");
  assert.equal(calls.packetBroadcast(1, 0x88b5, payload), payload.length);
  assert.equal(calls.packetBroadcast(0x7ffffff0, 0x88b5, payload), -6);
});

test("sendFds refuses what it cannot send and answers -errno from sendmsg", () => {
  const calls = locateKernelCalls()();
  const ENOTSOCK = 88;
  const file = openSync("/proc/self/stat", "r");
  try {
    const oneFd = Buffer.from(Int32Array.of(file).buffer);
    assert.equal(calls.sendFds(file, Buffer.from("x"), oneFd), -ENOTSOCK);
    assert.equal(calls.sendFds(file, Buffer.from("x"), Buffer.alloc(0)), -ENOTSOCK, "no fds is a plain send");
    assert.throws(
      () => calls.sendFds(file, Buffer.alloc(0), oneFd),
      TypeError,
      "fds need at least one byte to travel with",
    );
    assert.throws(() => calls.sendFds(file, Buffer.from("x"), Buffer.alloc(6)), TypeError, "fds are whole ints");
    assert.throws(() => calls.sendFds(file, Buffer.from("x"), Buffer.alloc(17 * 4)), TypeError, "at most 16 fds");
  } finally {
    closeSync(file);
  }
});
