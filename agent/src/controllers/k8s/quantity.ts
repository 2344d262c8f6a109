// Kubernetes resource quantities ("200m", "512Mi", "1.5Gi", "1e3"): parsed exactly and
// printed in the canonical form Kubernetes's JSON encoding gives them, which is how
// they appear in a pod Talos renders.

import { InvalidInputError } from "../../errors.js";

export class QuantityError extends InvalidInputError {}

type Format = "DecimalSI" | "BinarySI" | "DecimalExponent";

/** sign * digits * 10^scale, in the format its suffix asked for. */
export interface Quantity {
  negative: boolean;
  digits: bigint;
  scale: number;
  format: Format;
}

const decimalSuffixes: Record<string, number> = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const binarySuffixes: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const QUANTITY_RE = /^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$/;
// Kubernetes keeps nothing finer than nano units; finer values are rounded up.
const MIN_SCALE = -9;

export function parseQuantity(text: string): Quantity {
  const m = QUANTITY_RE.exec(text.trim() === text ? text : "");
  if (!m || (m[2] === "" && (m[3] ?? "") === ""))
    throw new QuantityError(
      `quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
      { quantity: text },
    );
  const [, sign, whole, fraction = "", suffix] = m;
  let digits = BigInt(whole + fraction || "0");
  let scale = -fraction.length;
  let format: Format;
  if (suffix in decimalSuffixes) {
    format = "DecimalSI";
    scale += decimalSuffixes[suffix];
  } else if (suffix in binarySuffixes) {
    format = "BinarySI";
    digits *= 1024n ** BigInt(binarySuffixes[suffix]);
  } else if (/^[eE][-+]?[0-9]+$/.test(suffix)) {
    format = "DecimalExponent";
    scale += Number(suffix.slice(1));
  } else {
    throw new QuantityError(`unable to parse quantity's suffix`, { quantity: text });
  }
  if (scale < MIN_SCALE) {
    const div = 10n ** BigInt(MIN_SCALE - scale);
    digits = (digits + div - 1n) / div;
    scale = MIN_SCALE;
  }
  return { negative: sign === "-" && digits !== 0n, digits, scale, format };
}

/** The value in whole units, rounded up (Quantity.Value()). */
export function quantityValue(q: Quantity): bigint {
  const v = q.scale >= 0 ? q.digits * 10n ** BigInt(q.scale) : ceilDiv(q.digits, 10n ** BigInt(-q.scale));
  return q.negative ? -v : v;
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

/** The canonical text Kubernetes serializes the quantity as. */
export function formatQuantity(q: Quantity): string {
  if (q.digits === 0n) return "0";
  const sign = q.negative ? "-" : "";
  if (q.format === "BinarySI") {
    const whole = wholeValue(q);
    // Small or fractional binary quantities are shown in decimal, as Kubernetes does.
    if (whole !== undefined && whole >= 1024n) return sign + base1024(whole);
    return sign + base10(q, "DecimalSI");
  }
  return sign + base10(q, q.format);
}

function wholeValue(q: Quantity): bigint | undefined {
  if (q.scale >= 0) return q.digits * 10n ** BigInt(q.scale);
  const div = 10n ** BigInt(-q.scale);
  return q.digits % div === 0n ? q.digits / div : undefined;
}

function base1024(value: bigint): string {
  let amount = value;
  let exponent = 0;
  while (amount % 1024n === 0n && exponent < 6) {
    amount /= 1024n;
    exponent++;
  }
  return `${amount}${["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][exponent]}`;
}

function base10(q: Quantity, format: Format): string {
  let amount = q.digits;
  let exponent = q.scale;
  while (amount % 10n === 0n) {
    amount /= 10n;
    exponent++;
  }
  const rest = ((exponent % 3) + 3) % 3;
  amount *= 10n ** BigInt(rest);
  exponent -= rest;
  if (format === "DecimalExponent") return exponent === 0 ? `${amount}` : `${amount}e${exponent}`;
  const suffix = Object.entries(decimalSuffixes).find(([, e]) => e === exponent)?.[0];
  // Beyond exa the SI suffixes end; Kubernetes falls back to an exponent.
  return suffix === undefined ? `${amount}e${exponent}` : `${amount}${suffix}`;
}
