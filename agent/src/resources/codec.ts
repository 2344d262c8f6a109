// Functions catalog modules use to turn YAML-shaped specs into protobuf spec
// messages: IP addresses/prefixes as common.NetIP*, PEM blobs as bytes, Talos
// enum names as numbers, and a generic camelCase -> proto field mapper.

import net from "node:net";
import type protobuf from "protobufjs";
import { lookupMessage } from "../api/index.js";
import { InvalidInputError } from "../errors.js";

/** IPv4/IPv6 text -> 4 or 16 bytes ("" -> empty, as Go's zero netip.Addr). */
export function ipBytes(addr: string): Buffer {
  if (addr === "") return Buffer.alloc(0);
  const zone = addr.indexOf("%");
  const a = zone >= 0 ? addr.slice(0, zone) : addr;
  if (net.isIPv4(a)) return Buffer.from(a.split(".").map((x) => Number(x)));
  if (!net.isIPv6(a)) throw new InvalidInputError(`invalid IP address ${JSON.stringify(addr)}`);
  const [head, tail] = a.includes("::") ? (a.split("::") as [string, string]) : [a, undefined];
  const groups = (s: string): number[] => {
    if (s === "") return [];
    const out: number[] = [];
    for (const part of s.split(":")) {
      if (part.includes(".")) {
        const b = part.split(".").map(Number) as [number, number, number, number];
        out.push((b[0] << 8) | b[1], (b[2] << 8) | b[3]);
      } else out.push(parseInt(part, 16));
    }
    return out;
  };
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
  const buf = Buffer.alloc(16);
  all.forEach((g, i) => buf.writeUInt16BE(g, i * 2));
  return buf;
}

/** `common.NetIP` from "10.0.0.1". */
export function netIP(addr: string): { ip: Buffer } {
  return { ip: ipBytes(addr) };
}

/** `common.NetIPPrefix` from "10.0.0.2/24". */
export function netIPPrefix(prefix: string): { ip: Buffer; prefix_length: number } {
  const slash = prefix.lastIndexOf("/");
  if (prefix === "") return { ip: Buffer.alloc(0), prefix_length: 0 };
  if (slash < 0) throw new InvalidInputError(`invalid IP prefix ${JSON.stringify(prefix)}`);
  return { ip: ipBytes(prefix.slice(0, slash)), prefix_length: Number(prefix.slice(slash + 1)) };
}

/** `common.NetIPPort` from "10.0.0.1:53" or "[::1]:53". */
export function netIPPort(addrPort: string): { ip: Buffer; port: number } {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(addrPort);
  if (!m) throw new InvalidInputError(`invalid IP:port ${JSON.stringify(addrPort)}`);
  return { ip: ipBytes(m[1]!), port: Number(m[2]) };
}

/** A PEM certificate and key as the specs hold them (PEM text; key may be ""). */
export interface PemCertAndKey {
  crt: string;
  key: string;
}

/** `common.PEMEncodedCertificateAndKey`. */
export function pemCertAndKeyProto(v: PemCertAndKey | undefined): { crt: Buffer; key: Buffer } | undefined {
  if (!v) return undefined;
  return { crt: Buffer.from(v.crt, "utf8"), key: Buffer.from(v.key, "utf8") };
}

/** Base64 of PEM text, as Talos's YAML marshals its PEM types. */
export function pemYaml(pem: string): string {
  return Buffer.from(pem, "utf8").toString("base64");
}

/** YAML shape Talos prints for a PEM pair: base64 of the PEM bytes. */
export function pemCertAndKeyYaml(v: PemCertAndKey | undefined): { crt: string; key: string } | null {
  if (!v) return null;
  return { crt: pemYaml(v.crt), key: pemYaml(v.key) };
}

/** Talos enum name -> number through a table; unknown names are an input error. */
export function enumValue(table: Record<string, number>, name: string, what: string): number {
  const v = table[name];
  if (v === undefined) throw new InvalidInputError(`unknown ${what} ${JSON.stringify(name)}`);
  return v;
}

const normalize = (s: string): string => s.replace(/_/g, "").toLowerCase();

/**
 * Maps a YAML-shaped (camelCase) spec onto message `protoType` by matching names
 * case-insensitively without underscores (`certSANIPs` -> `cert_sani_ps`), recursing
 * into nested messages. Strings, numbers, booleans and lists of them pass through;
 * enums, IPs and other special fields need a custom toProto. Unknown keys are dropped.
 */
export function autoProto(protoType: string): (spec: unknown) => object {
  return (spec) => mapMessage(lookupMessage(protoType), spec);
}

function mapMessage(type: protobuf.Type, value: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (value === null || typeof value !== "object") return out;
  const byName = new Map(type.fieldsArray.map((f) => [normalize(f.name), f]));
  for (const [k, v] of Object.entries(value)) {
    const field = byName.get(normalize(k));
    if (!field || v === undefined || v === null) continue;
    field.resolve();
    const nested = field.resolvedType;
    const isMessage = nested !== null && "fieldsArray" in nested;
    const conv = (x: unknown): unknown => (isMessage ? mapMessage(nested as protobuf.Type, x) : x);
    out[field.name] = Array.isArray(v) ? v.map(conv) : conv(v);
  }
  return out;
}
