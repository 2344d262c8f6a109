// The VMware guest's side of the backdoor's RPCI channel, low-bandwidth, as open-vm-tools' message
// layer speaks it: open a channel for the RPCI protocol (with cookies where the host gives them),
// send the request's size and then its bytes four at a time (little-endian), take the reply's size
// and bytes the same way, acknowledge them, close. `info-get guestinfo.<key>` answers
// "1 <value>", or "0 <why>" when the VM has no such key.

import { SystemError } from "../../errors.js";
import type { BackdoorRegisters, VmwareBackdoor } from "../../sys/vmware-backdoor.js";

export const COMMAND_GET_VERSION = 10;
export const COMMAND_MESSAGE = 0x1e;
export const RPCI_PROTOCOL = 0x49435052;
export const COOKIE_FLAG = 0x80000000;

/** A message command's type, in ecx's high half. */
export const MessageType = {
  open: 0,
  sendSize: 1,
  sendPayload: 2,
  receiveSize: 3,
  receivePayload: 4,
  receiveStatus: 5,
  close: 6,
} as const;

/** Status bits the host answers in ecx's high half. */
export const MessageStatus = { success: 0x0001, doReceive: 0x0002 } as const;

/** The RPCI channel failed (the host refused a step, or broke the protocol). */
export class RpciError extends SystemError {}

interface Channel {
  id: number;
  cookieHigh: number;
  cookieLow: number;
}

type MessageTypeValue = (typeof MessageType)[keyof typeof MessageType];

function message(
  backdoor: VmwareBackdoor,
  type: MessageTypeValue,
  channel: Channel | undefined,
  ebx: number,
): BackdoorRegisters {
  return backdoor.call({
    ebx: ebx >>> 0,
    ecx: ((type << 16) | COMMAND_MESSAGE) >>> 0,
    edx: channel ? (channel.id << 16) >>> 0 : 0,
    esi: channel?.cookieHigh ?? 0,
    edi: channel?.cookieLow ?? 0,
  });
}

const status = (r: BackdoorRegisters) => r.ecx >>> 16;
const succeeded = (r: BackdoorRegisters) => (status(r) & MessageStatus.success) !== 0;

function open(backdoor: VmwareBackdoor): Channel {
  // A host that knows no cookies refuses the flag: open again without it.
  for (const flags of [COOKIE_FLAG, 0]) {
    const r = message(backdoor, MessageType.open, undefined, RPCI_PROTOCOL | flags);
    if (succeeded(r)) return { id: r.edx >>> 16, cookieHigh: r.esi, cookieLow: r.edi };
  }
  throw new RpciError("could not open an RPCI channel on the VMware backdoor");
}

function send(backdoor: VmwareBackdoor, channel: Channel, request: Buffer): void {
  const refused = () => new RpciError("the VMware host refused the RPCI request", { channel: channel.id });
  if (!succeeded(message(backdoor, MessageType.sendSize, channel, request.length))) throw refused();
  for (let at = 0; at < request.length; at += 4) {
    const word = Buffer.alloc(4);
    request.copy(word, 0, at, at + 4);
    if (!succeeded(message(backdoor, MessageType.sendPayload, channel, word.readUInt32LE(0)))) throw refused();
  }
}

function receive(backdoor: VmwareBackdoor, channel: Channel): Buffer {
  const size = message(backdoor, MessageType.receiveSize, channel, 0);
  if (!succeeded(size)) throw new RpciError("the VMware host gave no RPCI reply", { channel: channel.id });
  if ((status(size) & MessageStatus.doReceive) === 0) return Buffer.alloc(0);
  if (size.edx >>> 16 !== MessageType.sendSize)
    throw new RpciError("RPCI protocol error: the host did not announce the reply's size", { channel: channel.id });
  const reply = Buffer.alloc(size.ebx);
  for (let at = 0; at < reply.length; at += 4) {
    const r = message(backdoor, MessageType.receivePayload, channel, MessageStatus.success);
    if (!succeeded(r) || r.edx >>> 16 !== MessageType.sendPayload) {
      message(backdoor, MessageType.receiveStatus, channel, 0);
      throw new RpciError("the VMware host broke off the RPCI reply", { channel: channel.id, at });
    }
    const word = Buffer.alloc(4);
    word.writeUInt32LE(r.ebx >>> 0);
    word.copy(reply, at, 0, Math.min(4, reply.length - at));
  }
  message(backdoor, MessageType.receiveStatus, channel, MessageStatus.success);
  return reply;
}

function close(backdoor: VmwareBackdoor, channel: Channel): void {
  if (!succeeded(message(backdoor, MessageType.close, channel, 0)))
    throw new RpciError("could not close the RPCI channel", { channel: channel.id });
}

/** One RPCI request and its reply, on a channel of its own. */
export function rpci(backdoor: VmwareBackdoor, request: string): string {
  const channel = open(backdoor);
  let reply: Buffer;
  try {
    send(backdoor, channel, Buffer.from(request, "utf8"));
    reply = receive(backdoor, channel);
  } catch (err) {
    try {
      close(backdoor, channel);
    } catch {
      // The request's failure is the one worth reporting; the channel is the host's to reap.
    }
    throw err;
  }
  close(backdoor, channel);
  return reply.toString("utf8");
}

/** guestinfo.<key> of the VM's configuration; undefined when it has none. */
export function guestInfo(backdoor: VmwareBackdoor, key: string): string | undefined {
  const reply = rpci(backdoor, `info-get guestinfo.${key}`);
  if (reply.startsWith("1 ")) return reply.slice(2);
  if (reply.startsWith("0 ")) return undefined;
  throw new RpciError(`invalid reply to info-get guestinfo.${key}: ${JSON.stringify(reply.slice(0, 40))}`, { key });
}

/** Whether the backdoor answers GETVERSION (all ones or zero: nothing is there). */
export function backdoorAnswers(backdoor: VmwareBackdoor): boolean {
  const { eax } = backdoor.call({ ebx: 0, ecx: COMMAND_GET_VERSION, edx: 0, esi: 0, edi: 0 });
  return eax !== 0xffffffff && eax !== 0;
}
