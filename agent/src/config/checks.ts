// Value checks for typed config fields (addresses, prefixes, URLs, durations, ...).
// Each returns undefined when the value is fine, else the problem text.

import { isIP } from "node:net";
import type { ValueCheck } from "./types/schema.js";

const q = (v: unknown) => JSON.stringify(v);

export function isCidr(s: string): boolean {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(s);
  if (!m) return false;
  const family = isIP(m[1]);
  const bits = Number(m[2]);
  return family === 4 ? bits <= 32 : family === 6 ? bits <= 128 : false;
}

// Go's two spellings of microseconds, U+00B5 and U+03BC, as escapes: one character above Latin-1 in the
// bundle makes V8 hold machined's whole source as two-byte text (scripts/bundle.mjs checks for it).
/** Go time.ParseDuration syntax: "0" or a sequence of number+unit ("1h30m", "3m0s", "1.5s"). */
export function isDuration(s: string): boolean {
  return s === "0" || /^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h))+$/.test(s);
}

/** Duration text in milliseconds (undefined when not a duration). */
export function durationMs(s: string): number | undefined {
  if (!isDuration(s)) return undefined;
  if (s === "0") return 0;
  const unit: Record<string, number> = {
    ns: 1e-6,
    us: 1e-3,
    "\u00b5s": 1e-3,
    "\u03bcs": 1e-3,
    ms: 1,
    s: 1000,
    m: 60000,
    h: 3600000,
  };
  let total = 0;
  for (const m of s.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/g))
    total += Number(m[1]) * unit[m[2]];
  return s.startsWith("-") ? -total : total;
}

export function isUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol.length > 1 && (u.host !== "" || u.protocol === "file:");
  } catch {
    return false;
  }
}

export function isHostPort(s: string): boolean {
  const m = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(s);
  if (!m) return false;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return false;
  const host = m[1].startsWith("[") ? m[1].slice(1, -1) : m[1];
  return m[1].startsWith("[") ? isIP(host) === 6 : host.length > 0;
}

export function checkValue(value: unknown, check: ValueCheck): string | undefined {
  if (typeof check === "object") {
    return typeof value === "string" && check.enum.includes(value)
      ? undefined
      : `invalid value ${q(value)}: must be one of [${check.enum.map(q).join(", ")}]`;
  }
  if (check === "port") {
    return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= 65535
      ? undefined
      : `invalid port ${q(value)}`;
  }
  if (typeof value !== "string") return undefined;
  switch (check) {
    case "url":
      return isUrl(value) ? undefined : `invalid URL ${q(value)}`;
    case "cidr":
      return isCidr(value) ? undefined : `invalid CIDR ${q(value)}`;
    case "ip":
      return isIP(value) ? undefined : `invalid IP address ${q(value)}`;
    case "ipOrCidr":
      return isIP(value) || isCidr(value) ? undefined : `invalid address ${q(value)}: expected an IP address or a CIDR`;
    case "subnetFilter": {
      const s = value.startsWith("!") ? value.slice(1) : value;
      return isIP(s) || isCidr(s) ? undefined : `invalid subnet ${q(value)}`;
    }
    case "duration":
      return isDuration(value) ? undefined : `invalid duration ${q(value)}`;
    case "hostPort":
      return isHostPort(value) ? undefined : `invalid endpoint ${q(value)}: expected host:port`;
    case "absPath":
      return value.startsWith("/") ? undefined : `path ${q(value)} must be absolute`;
  }
}
