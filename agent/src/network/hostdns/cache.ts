// A bounded DNS answer cache (as CoreDNS's cache plugin Talos puts in front of its
// forwarder): positive answers for their smallest TTL, at most 1 h; negative ones
// (NXDOMAIN, NODATA with an SOA) per RFC 2308, at most 30 min; at least 5 s; the
// least recently used entry goes when the cache is full. SERVFAIL and truncated
// replies are not kept. A hit is the stored reply with the query's id and TTLs
// lowered by the time it spent in the cache.

import {
  type DnsQuestion,
  RCODE_NOERROR,
  RCODE_NXDOMAIN,
  readReply,
  rewriteReply,
  type DnsReplyInfo,
} from "./message.js";

export const DEFAULT_CAPACITY = 10_000;
const MAX_POSITIVE_TTL_S = 3600;
const MAX_NEGATIVE_TTL_S = 1800;
const MIN_TTL_S = 5;

interface Entry {
  reply: Buffer;
  ttls: DnsReplyInfo["ttls"];
  storedAtMs: number;
  expiresAtMs: number;
}

export interface DnsCacheOptions {
  capacity?: number;
  /** Monotonic milliseconds; default performance.now. */
  now?: () => number;
}

const keyOf = (q: DnsQuestion) => `${q.name}/${q.type}/${q.class}`;

export class DnsCache {
  private readonly entries = new Map<string, Entry>();
  private readonly capacity: number;
  private readonly now: () => number;
  hits = 0;
  misses = 0;

  constructor(opts: DnsCacheOptions = {}) {
    this.capacity = opts.capacity ?? DEFAULT_CAPACITY;
    this.now = opts.now ?? (() => performance.now());
  }

  get size(): number {
    return this.entries.size;
  }

  /** The cached reply for `q` rewritten for a query with id `id`, or undefined. */
  get(q: DnsQuestion, id: number): Buffer | undefined {
    const key = keyOf(q);
    const e = this.entries.get(key);
    const now = this.now();
    if (!e || e.expiresAtMs <= now) {
      if (e) this.entries.delete(key);
      this.misses++;
      return undefined;
    }
    // Most recently used goes last.
    this.entries.delete(key);
    this.entries.set(key, e);
    this.hits++;
    return rewriteReply(e.reply, id, e.ttls, Math.floor((now - e.storedAtMs) / 1000));
  }

  /** Keeps `reply` for `q` when it may be cached; returns whether it was. */
  put(q: DnsQuestion, reply: Buffer): boolean {
    let info: DnsReplyInfo;
    try {
      info = readReply(reply);
    } catch {
      return false;
    }
    const ttl = cacheTtl(info);
    if (ttl === undefined) return false;
    const key = keyOf(q);
    this.entries.delete(key);
    while (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value!);
    const now = this.now();
    this.entries.set(key, {
      reply: Buffer.from(reply),
      ttls: info.ttls,
      storedAtMs: now,
      expiresAtMs: now + ttl * 1000,
    });
    return true;
  }
}

function cacheTtl(info: DnsReplyInfo): number | undefined {
  if (info.truncated) return undefined;
  const negative = info.rcode === RCODE_NXDOMAIN || (info.rcode === RCODE_NOERROR && info.answerCount === 0);
  if (negative)
    return info.soaTtl === undefined ? undefined : Math.max(MIN_TTL_S, Math.min(info.soaTtl, MAX_NEGATIVE_TTL_S));
  if (info.rcode !== RCODE_NOERROR) return undefined;
  const min = Math.min(...info.ttls.map((t) => t.ttl));
  return Math.max(MIN_TTL_S, Math.min(min, MAX_POSITIVE_TTL_S));
}
