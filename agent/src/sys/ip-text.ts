// Addresses as text the way Go's net.IP.String() prints them, so what we report reads as Talos's.

/** 16 bytes of an IPv6 address: v4-mapped as a dotted quad, the longest zero run (of two or more groups) as "::". */
export function ipv6Text(b: Buffer): string {
  if (b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) return [...b.subarray(12)].join(".");
  const groups = Array.from({ length: 8 }, (_, i) => b.readUInt16BE(i * 2));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [bestStart, bestLen] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestLen < 2) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLen).join(":")}`;
}
