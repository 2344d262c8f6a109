// MachineService.PacketCapture (talosctl pcap): a pcap file of what one link sees, streamed as common.Data
// messages (the global header, then one record each) until the caller goes away. As Talos: the link is
// looked up among the LinkStatuses (so "any", which is no link, is NotFound), Ethernet and loopback links
// are captured as LINKTYPE_ETHERNET and links without a link-layer header as LINKTYPE_RAW, other types are
// InvalidArgument, a snap length of 0 is 4096. A program the kernel refuses is InvalidArgument (Talos
// answers it as an untyped error); a packet is cut to the snap length, which Talos's header promises but
// its reader does not keep.

import type * as grpc from "@grpc/grpc-js";
import { InvalidInputError, NotFoundError, SystemError } from "../../errors.js";
import { logger } from "../../log.js";
import { LINKTYPE_ETHERNET, LINKTYPE_RAW, pcapFileHeader, pcapRecord } from "../../network/pcap/file.js";
import {
  MAX_SNAP_LENGTH,
  PacketCaptureSetupError,
  type BpfInstruction,
  type PacketCapture,
  type PacketCaptureSource,
} from "../../sys/packet-capture.js";
import { cancellation, send } from "./stream.js";

const log = logger("machined");

/** machine.PacketCaptureRequest */
export interface PacketCaptureRequest {
  interface?: string;
  promiscuous?: boolean;
  snap_len?: number;
  bpf_filter?: { op?: number; jt?: number; jf?: number; k?: number }[];
}

/** The link a capture names, as its LinkStatus says. */
export interface CaptureLink {
  index: number;
  /** Talos's link type name (LinkStatusSpec.type: "ether", "loopback", "nohdr", ...). */
  type: string;
}

export interface PacketCaptureDeps {
  link(name: string): CaptureLink | undefined;
  source: PacketCaptureSource;
}

/** afpacket's default frame size, Talos's snap length when the request has none. */
export const DEFAULT_SNAP_LENGTH = 4096;

const linkTypes: Record<string, number> = {
  ether: LINKTYPE_ETHERNET,
  loopback: LINKTYPE_ETHERNET,
  nohdr: LINKTYPE_RAW,
};

/** What a request asks for, checked before anything is opened. */
export interface CapturePlan {
  ifindex: number;
  linkType: number;
  snapLength: number;
  promiscuous: boolean;
  filter: BpfInstruction[];
}

export function capturePlan(req: PacketCaptureRequest, link: PacketCaptureDeps["link"]): CapturePlan {
  const name = req.interface ?? "";
  const found = link(name);
  if (!found) throw new NotFoundError(`interface ${JSON.stringify(name)} not found`, { interface: name });
  const linkType = linkTypes[found.type];
  if (linkType === undefined)
    throw new InvalidInputError(`unsupported link type ${found.type}`, { interface: name, type: found.type });
  const snapLength = req.snap_len || DEFAULT_SNAP_LENGTH;
  if (snapLength > MAX_SNAP_LENGTH)
    throw new InvalidInputError(`snap length ${snapLength} is over ${MAX_SNAP_LENGTH}`, { snapLength });
  return {
    ifindex: found.index,
    linkType,
    snapLength,
    promiscuous: req.promiscuous === true,
    filter: bpfProgram(req.bpf_filter ?? []),
  };
}

/** The request's instructions as struct sock_filter fields; a field that does not fit is the caller's error. */
function bpfProgram(instructions: NonNullable<PacketCaptureRequest["bpf_filter"]>): BpfInstruction[] {
  return instructions.map((i, n) => {
    const ins = { op: i.op ?? 0, jt: i.jt ?? 0, jf: i.jf ?? 0, k: i.k ?? 0 };
    const over =
      ins.op > 0xffff
        ? `op ${ins.op} is over 0xffff`
        : ins.jt > 0xff
          ? `jt ${ins.jt} is over 0xff`
          : ins.jf > 0xff
            ? `jf ${ins.jf} is over 0xff`
            : undefined;
    if (over) throw new InvalidInputError(`error setting BPF filter: instruction ${n}: ${over}`, { instruction: n });
    return ins;
  });
}

/** Opens the capture; a filter the kernel refuses is the caller's error, anything else the node's. */
function openCapture(source: PacketCaptureSource, plan: CapturePlan, name: string): PacketCapture {
  try {
    return source.open(plan);
  } catch (err) {
    if (err instanceof PacketCaptureSetupError && err.step === "filter" && err.errno === "EINVAL") {
      throw new InvalidInputError(
        "the kernel refused the BPF program",
        { interface: name, instructions: plan.filter.length },
        { cause: err },
      );
    }
    throw new SystemError(`error capturing packets on ${JSON.stringify(name)}`, { interface: name }, { cause: err });
  }
}

/** Streams the capture until the caller cancels (or the capture fails). */
export async function streamPacketCapture(
  call: grpc.ServerWritableStream<PacketCaptureRequest, unknown>,
  deps: PacketCaptureDeps,
): Promise<void> {
  const name = call.request.interface ?? "";
  const plan = capturePlan(call.request, deps.link);
  const capture = openCapture(deps.source, plan, name);
  const { signal, dispose } = cancellation(call);
  const stop = () => void capture.close();
  signal.addEventListener("abort", stop, { once: true });
  let packets = 0;
  try {
    if (!(await send(call, { bytes: pcapFileHeader(plan.snapLength, plan.linkType) }))) return;
    for await (const p of capture.packets()) {
      if (!(await send(call, { bytes: pcapRecord(p) }))) break;
      packets++;
    }
  } finally {
    signal.removeEventListener("abort", stop);
    dispose();
    await capture.close();
    log.info("pcap: capture ended", { interface: name, packets });
  }
  if (!call.cancelled) call.end();
}

/** The PacketCapture handler where the node can capture; none (so Unimplemented) otherwise. */
export function packetCaptureImpl(deps: PacketCaptureDeps | undefined): {
  PacketCapture?: (call: grpc.ServerWritableStream<PacketCaptureRequest, unknown>) => Promise<void>;
} {
  return deps ? { PacketCapture: (call) => streamPacketCapture(call, deps) } : {};
}
