// A VMware host's side of the backdoor for the platform's tests, written from open-vm-tools'
// backdoor and message protocol: GETVERSION, and RPCI channels (open with or without cookies,
// the request's size then its bytes four at a time, the reply's size then its bytes, the
// receive status, close) answering `info-get guestinfo.<key>` from a map.
import type { BackdoorRegisters, VmwareBackdoor } from "../../../agent/src/sys/vmware-backdoor.js";
import { BACKDOOR_MAGIC } from "../../../agent/src/sys/vmware-backdoor.js";
import {
  COMMAND_GET_VERSION,
  COMMAND_MESSAGE,
  COOKIE_FLAG,
  MessageStatus,
  MessageType,
  RPCI_PROTOCOL,
} from "../../../agent/src/machined/platforms/vmware-rpci.js";

interface HostChannel {
  cookieHigh: number;
  cookieLow: number;
  request: Buffer;
  received: number;
  reply: Buffer;
  replied: number;
}

export class FakeVmwareHost implements VmwareBackdoor {
  signature = "VMwareVMware";
  /** GETVERSION answers; false: the port reads all ones, as where nothing is behind it. */
  answersVersion = true;
  /** Whether the host takes the cookie flag on open. */
  cookies = true;
  /** Refuses the payload of any request that contains this text. */
  refuse: string | undefined;
  /** Every RPCI request received whole, in order. */
  readonly requests: string[] = [];
  readonly channels = new Map<number, HostChannel>();
  private nextId = 1;

  constructor(readonly guestinfo: Map<string, string> = new Map()) {}

  hypervisorSignature(): string {
    return this.signature;
  }

  call(regs: Omit<BackdoorRegisters, "eax">): BackdoorRegisters {
    const r: BackdoorRegisters = { ...regs, eax: BACKDOOR_MAGIC };
    const command = regs.ecx & 0xffff;
    if (command === COMMAND_GET_VERSION)
      return this.answersVersion ? { ...r, eax: 6, ebx: BACKDOOR_MAGIC } : { ...r, eax: 0xffffffff };
    // Commands it does not know leave the registers as they were (QEMU's vmport does the same).
    if (command !== COMMAND_MESSAGE) return r;
    const type = regs.ecx >>> 16;
    if (type === MessageType.open) return this.open(r);
    const channel = this.channels.get(regs.edx >>> 16);
    if (!channel || channel.cookieHigh !== regs.esi || channel.cookieLow !== regs.edi) return failed(r);
    return this.onChannel(r, type, regs.edx >>> 16, channel);
  }

  private open(r: BackdoorRegisters): BackdoorRegisters {
    const withCookie = (r.ebx & COOKIE_FLAG) !== 0;
    if ((r.ebx & ~COOKIE_FLAG) >>> 0 !== RPCI_PROTOCOL || (withCookie && !this.cookies)) return failed(r);
    const id = this.nextId++;
    const channel = {
      cookieHigh: withCookie ? 0x1000 + id : 0,
      cookieLow: withCookie ? 0x2000 + id : 0,
      request: Buffer.alloc(0),
      received: 0,
      reply: Buffer.alloc(0),
      replied: 0,
    };
    this.channels.set(id, channel);
    return { ...ok(r), edx: (id << 16) >>> 0, esi: channel.cookieHigh, edi: channel.cookieLow };
  }

  private onChannel(r: BackdoorRegisters, type: number, id: number, c: HostChannel): BackdoorRegisters {
    switch (type) {
      case MessageType.sendSize:
        c.request = Buffer.alloc(r.ebx);
        c.received = 0;
        return ok(r);
      case MessageType.sendPayload: {
        const word = Buffer.alloc(4);
        word.writeUInt32LE(r.ebx);
        c.received += word.copy(c.request, c.received, 0, Math.min(4, c.request.length - c.received));
        if (this.refuse !== undefined && c.request.toString("utf8").includes(this.refuse)) return failed(r);
        if (c.received === c.request.length) this.answer(c);
        return ok(r);
      }
      case MessageType.receiveSize:
        return {
          ...r,
          ecx: ((MessageStatus.success | MessageStatus.doReceive) << 16) >>> 0,
          edx: (MessageType.sendSize << 16) >>> 0,
          ebx: c.reply.length,
        };
      case MessageType.receivePayload: {
        const word = Buffer.alloc(4);
        c.reply.copy(word, 0, c.replied, c.replied + 4);
        c.replied += 4;
        return { ...ok(r), edx: (MessageType.sendPayload << 16) >>> 0, ebx: word.readUInt32LE(0) };
      }
      case MessageType.receiveStatus:
        return ok(r);
      case MessageType.close:
        this.channels.delete(id);
        return ok(r);
      default:
        return failed(r);
    }
  }

  private answer(c: HostChannel): void {
    const request = c.request.toString("utf8");
    this.requests.push(request);
    const key = /^info-get guestinfo\.(.+)$/.exec(request)?.[1];
    const value = key === undefined ? undefined : this.guestinfo.get(key);
    const reply = key === undefined ? "0 Unknown command" : value === undefined ? "0 No value found" : `1 ${value}`;
    c.reply = Buffer.from(reply, "utf8");
    c.replied = 0;
  }
}

function ok(r: BackdoorRegisters): BackdoorRegisters {
  return { ...r, ecx: (MessageStatus.success << 16) >>> 0 };
}

function failed(r: BackdoorRegisters): BackdoorRegisters {
  return { ...r, ecx: 0 };
}
