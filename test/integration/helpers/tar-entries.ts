// The entries of an uncompressed tar as Go's archive/tar writes short names (ustar headers): what
// the node sends in Kubeconfig's tar.gz, read back by tests.

export interface TarEntry {
  name: string;
  mode: number;
  type: string;
  contents: Buffer;
}

/** The entries of an uncompressed tar (ustar headers, as Go's writer makes them for short names). */
export function tarEntries(tar: Buffer): TarEntry[] {
  const out: TarEntry[] = [];
  const field = (h: Buffer, at: number, len: number) =>
    h
      .subarray(at, at + len)
      .toString("ascii")
      .replace(/\0.*$/s, "");
  for (let at = 0; at + 512 <= tar.length; ) {
    const header = tar.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const size = parseInt(field(header, 124, 12).trim(), 8);
    out.push({
      name: field(header, 0, 100),
      mode: parseInt(field(header, 100, 8).trim(), 8),
      type: field(header, 156, 1),
      contents: tar.subarray(at + 512, at + 512 + size),
    });
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}
