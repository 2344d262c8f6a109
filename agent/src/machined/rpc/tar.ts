// A tar writer for Copy: POSIX ustar headers, a PAX extended header where a field does
// not fit (long names, huge sizes or ids), as Go's archive/tar writes them, so talosctl's
// reader (Go's) takes them back.

export const TarType = { file: "0", symlink: "2", char: "3", block: "4", dir: "5", fifo: "6" } as const;

export interface TarHeader {
  name: string;
  /** Permission bits plus setuid/setgid/sticky (0o7777). */
  mode: number;
  uid: number;
  gid: number;
  size: number;
  /** Seconds since the epoch. */
  mtime: number;
  type: (typeof TarType)[keyof typeof TarType];
  linkname?: string;
  devmajor?: number;
  devminor?: number;
}

export const blockSize = 512;

function octal(buf: Buffer, offset: number, width: number, value: number): void {
  buf.write(value.toString(8).padStart(width - 1, "0") + "\0", offset, width, "ascii");
}

const fitsOctal = (value: number, width: number) => value >= 0 && value < 8 ** (width - 1);

/** Splits a long name into ustar's prefix (≤155 bytes) and name (≤100 bytes) at a "/", as Go's writer tries before PAX. */
function splitUstarPath(name: string): { prefix: string; name: string } | undefined {
  const bytes = Buffer.byteLength(name);
  if (bytes <= 100) return { prefix: "", name };
  for (let i = name.length - 1; i > 0; i--) {
    if (name[i] !== "/") continue;
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100 && rest.length > 0)
      return { prefix, name: rest };
  }
  return undefined;
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = Buffer.byteLength(body) + 1;
  while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
  return `${len}${body}`;
}

function ustarBlock(
  h: TarHeader,
  path: { prefix: string; name: string },
  typeflag: string,
  size: number,
  linkname: string,
): Buffer {
  const b = Buffer.alloc(blockSize);
  b.write(path.name, 0, 100, "utf8");
  octal(b, 100, 8, fitsOctal(h.mode, 8) ? h.mode : 0);
  octal(b, 108, 8, fitsOctal(h.uid, 8) ? h.uid : 0);
  octal(b, 116, 8, fitsOctal(h.gid, 8) ? h.gid : 0);
  octal(b, 124, 12, fitsOctal(size, 12) ? size : 0);
  octal(b, 136, 12, fitsOctal(h.mtime, 12) ? h.mtime : 0);
  b.write(typeflag, 156, 1, "ascii");
  b.write(linkname, 157, 100, "utf8");
  b.write("ustar\0" + "00", 257, 8, "ascii");
  octal(b, 329, 8, h.devmajor ?? 0);
  octal(b, 337, 8, h.devminor ?? 0);
  b.write(path.prefix, 345, 155, "utf8");
  b.fill(" ", 148, 156);
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(sum.toString(8).padStart(6, "0") + "\0 ", 148, 8, "ascii");
  return b;
}

function padded(data: Buffer): Buffer {
  const rest = data.length % blockSize;
  return rest === 0 ? data : Buffer.concat([data, Buffer.alloc(blockSize - rest)]);
}

/** The header block(s) for one entry: a PAX 'x' header first when a value does not fit ustar. */
export function encodeHeader(h: TarHeader): Buffer {
  const records: string[] = [];
  let path = splitUstarPath(h.name);
  if (!path) {
    records.push(paxRecord("path", h.name));
    path = { prefix: "", name: Buffer.from(h.name).subarray(0, 100).toString("utf8") };
  }
  const linkname = h.linkname ?? "";
  if (Buffer.byteLength(linkname) > 100) records.push(paxRecord("linkpath", linkname));
  if (!fitsOctal(h.size, 12)) records.push(paxRecord("size", String(h.size)));
  if (!fitsOctal(h.uid, 8)) records.push(paxRecord("uid", String(h.uid)));
  if (!fitsOctal(h.gid, 8)) records.push(paxRecord("gid", String(h.gid)));
  if (!fitsOctal(h.mtime, 12)) records.push(paxRecord("mtime", String(h.mtime)));
  const main = ustarBlock(h, path, h.type, h.size, Buffer.from(linkname).subarray(0, 100).toString("utf8"));
  if (records.length === 0) return main;
  const pax = Buffer.from(records.sort().join(""));
  const paxName = { prefix: "", name: `PaxHeaders.0/${path.name}`.slice(0, 100) };
  return Buffer.concat([
    ustarBlock({ ...h, mode: 0o644, uid: 0, gid: 0, mtime: 0 }, paxName, "x", pax.length, ""),
    padded(pax),
    main,
  ]);
}

/** Data padding after `size` bytes of an entry. */
export function dataPadding(size: number): Buffer {
  const rest = size % blockSize;
  return Buffer.alloc(rest === 0 ? 0 : blockSize - rest);
}

/** The end of an archive: two zero blocks. */
export const trailer = Buffer.alloc(2 * blockSize);
