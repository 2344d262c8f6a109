// dbus-next's wire format, which its package ships without types: the bus side of the
// protocol needs the marshaller alone, not dbus-next's client connection.

declare module "dbus-next/lib/dbus-buffer.js" {
  /** Reads marshalled values; `endian` is the message's first byte. */
  class DBusBuffer {
    constructor(buffer: Buffer, startPos: number, endian: number, fds: null, options: object);
    /** The values of `signature`, in marshaller form; `align(3)` pads to 8 bytes. */
    read(signature: string): unknown[];
    align(power: number): void;
  }
  export = DBusBuffer;
}

declare module "dbus-next/lib/marshall-compat.js" {
  /** Marshals a message whose body is in dbus-next's JS form; returns the bytes and the fds its `h` values name. */
  export function marshallMessage(message: object): [Buffer, number[]];
  /** Converts an unmarshalled body to dbus-next's JS form (in place) and returns the message. */
  export function messageToJsFmt<T extends object>(message: T): T;
}

declare module "dbus-next/lib/variant.js" {
  /** A `v` value: its signature and its value in dbus-next's JS form (the marshaller's own class). */
  export class Variant<T = unknown> {
    constructor(signature: string, value: T);
    signature: string;
    value: T;
  }
}
