// Capturing one link's packets (PacketCapture). The socket is set up here, one kernel call at a time through
// the kernel-calls addon, so each failure is an errno at its step: a raw packet socket, the caller's classic
// BPF program (SO_ATTACH_FILTER), promiscuous mode as a membership of the socket (PACKET_MR_PROMISC), then the
// bind to the link for every protocol. It is read by the reader program (agent/native/packet-capture.c) that
// gets it as its stdin: a blocking read in Node's thread pool could not be interrupted when the caller goes
// away. The reader holds the only reference to the socket; its exit closes it, and the kernel drops the
// membership (and with it promiscuous mode) as the socket closes.

import { spawn } from "node:child_process";
import { closeSync, existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { getSystemErrorName } from "node:util";
import { SystemError } from "../errors.js";
import { locateKernelCalls, type KernelCalls } from "./kernel-calls.js";

/** One classic BPF instruction (struct sock_filter), as `tcpdump -dd` prints them. */
export interface BpfInstruction {
  op: number;
  jt: number;
  jf: number;
  k: number;
}

export interface CaptureRequest {
  ifindex: number;
  promiscuous: boolean;
  /** The most bytes of a packet kept (1..MAX_SNAP_LENGTH). */
  snapLength: number;
  /** Empty: every packet. */
  filter: readonly BpfInstruction[];
}

export interface CapturedPacket {
  /** When the kernel received the packet, in nanoseconds since the epoch. */
  timestampNs: bigint;
  /** The packet's length on the wire; `data` holds at most the snap length of it. */
  length: number;
  data: Buffer;
}

/** A running capture: its packets until close(), which ends them and releases the socket. */
export interface PacketCapture {
  packets(): AsyncIterable<CapturedPacket>;
  close(): Promise<void>;
}

/** Opens captures; throws PacketCaptureSetupError naming the step that failed. */
export interface PacketCaptureSource {
  open(req: CaptureRequest): PacketCapture;
}

/** The setup step a capture failed at. */
export type CaptureStep = "socket" | "filter" | "promiscuous" | "bind" | "reader";

export class PacketCaptureSetupError extends SystemError {
  constructor(
    readonly step: CaptureStep,
    readonly errno: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, { step, errno }, options);
  }
}

/** The reader failed while the capture ran. */
export class PacketCaptureReadError extends SystemError {}

/** The reader's limit (MAX_SNAP_LENGTH in packet-capture.c). */
export const MAX_SNAP_LENGTH = 262144;
const ETH_P_ALL = 0x0003;
const PACKET_MR_PROMISC = 1;
/** struct sock_filter: u16 code, u8 jt, u8 jf, u32 k. */
const SOCK_FILTER_SIZE = 8;
/** The reader's frame header: u64 timestamp, u32 length, u32 captured length (host order, little-endian on our targets). */
const FRAME_HEADER_SIZE = 16;

/** The program as the kernel takes it: struct sock_filter[] in host byte order. */
export function sockFilterProgram(filter: readonly BpfInstruction[]): Buffer {
  const b = Buffer.alloc(filter.length * SOCK_FILTER_SIZE);
  filter.forEach((ins, i) => {
    const at = i * SOCK_FILTER_SIZE;
    b.writeUInt16LE(ins.op, at);
    b.writeUInt8(ins.jt, at + 2);
    b.writeUInt8(ins.jf, at + 3);
    b.writeUInt32LE(ins.k, at + 4);
  });
  return b;
}

/** Splits the reader's output into packets; keeps what a chunk ends in the middle of for the next one. */
export class FrameDecoder {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): CapturedPacket[] {
    let buf = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const out: CapturedPacket[] = [];
    while (buf.length >= FRAME_HEADER_SIZE) {
      const captured = buf.readUInt32LE(12);
      if (buf.length < FRAME_HEADER_SIZE + captured) break;
      out.push({
        timestampNs: buf.readBigUInt64LE(0),
        length: buf.readUInt32LE(8),
        // A copy: the chunk's memory is Node's pool, shared with what comes after.
        data: Buffer.from(buf.subarray(FRAME_HEADER_SIZE, FRAME_HEADER_SIZE + captured)),
      });
      buf = buf.subarray(FRAME_HEADER_SIZE + captured);
    }
    this.pending = Buffer.from(buf);
    return out;
  }
}

/** The reader program: beside the bundle's chunks in the image, beside the entry script (dist/agent/src/cmd) in dist. */
export function locateCaptureReader(): string {
  const candidates = ["./packet-capture", "../cmd/packet-capture"].map((p) =>
    fileURLToPath(new URL(p, import.meta.url)),
  );
  const found = candidates.find((p) => existsSync(p));
  if (!found)
    throw new PacketCaptureSetupError(
      "reader",
      "ENOENT",
      `the packet capture reader is not installed (looked at ${candidates.join(", ")})`,
    );
  return found;
}

/** Captures through the kernel: the addon sets the socket up, the reader program reads it. */
export function kernelPacketCaptureSource(reader: () => string = locateCaptureReader): PacketCaptureSource {
  let calls: KernelCalls | undefined;
  return {
    open(req) {
      try {
        calls ??= locateKernelCalls()();
      } catch (err) {
        throw new PacketCaptureSetupError("socket", "ENOSYS", "packet capture needs the kernel-calls addon", {
          cause: err,
        });
      }
      const program = reader();
      const fd = openCaptureSocket(calls, req);
      try {
        return startReader(program, fd, req.snapLength);
      } finally {
        // The reader has its own copy (its stdin) or failed to start: either way this one goes.
        closeSync(fd);
      }
    },
  };
}

function openCaptureSocket(calls: KernelCalls, req: CaptureRequest): number {
  const fd = calls.packetSocket();
  if (fd < 0) throw setupError("socket", fd, "error creating a packet socket");
  const check = (step: CaptureStep, ret: number, what: string) => {
    if (ret >= 0) return;
    closeSync(fd);
    throw setupError(step, ret, what);
  };
  if (req.filter.length > 0)
    check("filter", calls.attachFilter(fd, sockFilterProgram(req.filter)), "error setting BPF filter");
  if (req.promiscuous)
    check(
      "promiscuous",
      calls.packetMembership(fd, req.ifindex, PACKET_MR_PROMISC),
      "error setting promiscuous mode true",
    );
  check("bind", calls.packetBind(fd, req.ifindex, ETH_P_ALL), `error binding the packet socket to link ${req.ifindex}`);
  return fd;
}

function setupError(step: CaptureStep, ret: number, what: string): PacketCaptureSetupError {
  const errno = getSystemErrorName(ret);
  return new PacketCaptureSetupError(step, errno, `${what}: ${errno}`);
}

function startReader(program: string, fd: number, snapLength: number): PacketCapture {
  const child = spawn(program, [String(snapLength), String(process.pid)], { stdio: [fd, "pipe", "pipe"] });
  // "exit", not "close": a capture closed while its packets are not being read never drains the pipe.
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null } | Error>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", resolve);
  });
  const stdout = child.stdout!;
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (s: string) => (stderr = (stderr + s).slice(-4096)));
  let closing = false;
  return {
    async *packets() {
      const decoder = new FrameDecoder();
      try {
        for await (const chunk of stdout as AsyncIterable<Buffer>) yield* decoder.push(chunk);
      } catch (err) {
        // close() destroys the pipe under a pending read: that is the end of the capture, not a failure.
        if (!closing)
          throw new PacketCaptureReadError(
            "reading the packet capture reader's output failed",
            { program },
            { cause: err },
          );
      }
      const end = await ended;
      if (end instanceof Error)
        throw new PacketCaptureReadError("starting the packet capture reader failed", { program }, { cause: end });
      if (!closing && end.code !== 0) {
        throw new PacketCaptureReadError(
          `the packet capture reader failed: ${stderr.trim() || `exit ${end.code ?? end.signal}`}`,
          { program, code: end.code, signal: end.signal },
        );
      }
    },
    async close() {
      closing = true;
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      stdout.destroy();
      await ended;
    },
  };
}
