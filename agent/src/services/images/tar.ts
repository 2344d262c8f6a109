import type { FileHandle } from "node:fs/promises";
import { InvalidInputError } from "../../errors.js";

/** One regular file of a tar archive: where its bytes are. */
export interface TarEntry {
  name: string;
  offset: number;
  size: number;
}

function field(block: Buffer, start: number, length: number): string {
  const raw = block.subarray(start, start + length);
  const end = raw.indexOf(0);
  return raw.subarray(0, end < 0 ? raw.length : end).toString("utf8");
}

function octal(block: Buffer, start: number, length: number): number {
  // GNU base-256 sizes (files over 8 GiB) set the high bit; layers that large are refused.
  if (block[start]! & 0x80) throw new InvalidInputError("tar entry too large");
  const s = field(block, start, length).trim();
  return s === "" ? 0 : parseInt(s, 8);
}

/** Lists the regular files of a ustar/GNU/pax archive (long names from pax `path` and GNU `L` entries). */
export async function tarEntries(fh: FileHandle): Promise<Map<string, TarEntry>> {
  const out = new Map<string, TarEntry>();
  const block = Buffer.alloc(512);
  let pos = 0;
  let longName: string | undefined;
  for (;;) {
    const { bytesRead } = await fh.read(block, 0, 512, pos);
    if (bytesRead < 512 || block.every((b) => b === 0)) break;
    const size = octal(block, 124, 12);
    const type = String.fromCharCode(block[156]!);
    const prefix = field(block, 345, 155);
    let name = field(block, 0, 100);
    if (prefix && field(block, 257, 6) === "ustar") name = `${prefix}/${name}`;
    const dataAt = pos + 512;
    if (type === "x" || type === "L") {
      const data = Buffer.alloc(size);
      await fh.read(data, 0, size, dataAt);
      if (type === "L") longName = field(data, 0, size);
      else {
        const m = /\d+ path=([^\n]*)\n/.exec(data.toString("utf8"));
        if (m) longName = m[1];
      }
    } else {
      if ((type === "0" || type === "\0") && size >= 0)
        out.set((longName ?? name).replace(/^\.\//, ""), { name: longName ?? name, offset: dataAt, size });
      longName = undefined;
    }
    pos = dataAt + Math.ceil(size / 512) * 512;
  }
  return out;
}
