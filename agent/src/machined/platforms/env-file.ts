// A shell-style environment file (OpenNebula's context.sh) read as Talos reads it with
// hashicorp/go-envparse: one KEY=value a line (spaces around `=` and an `export ` prefix
// allowed, `#` lines are comments), values bare (a `#` starts a comment), "double quoted" with
// JSON's escapes, or 'single quoted'. Anything else (a line without `=`, a control character,
// an unmatched quote) is an error naming the line.

import { MetadataError } from "./metadata-http.js";

const escapes: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", r: "\r", n: "\n", t: "\t" };

class LineError extends Error {}

function hexUnit(value: string, at: number): number {
  const hex = value.slice(at, at + 4);
  if (!/^[0-9a-fA-F]{4}$/.test(hex))
    throw new LineError(hex.length < 4 ? "incomplete hex sequence" : `invalid hex in ${JSON.stringify(hex)}`);
  return parseInt(hex, 16);
}

/** `\uXXXX` at `value[i]` (the `u`), a surrogate pair taking the next one too; returns the text and the index of its last character. */
function unicodeEscape(value: string, i: number): [string, number] {
  const unit = hexUnit(value, i + 1);
  if (unit < 0xd800 || unit > 0xdfff) return [String.fromCharCode(unit), i + 4];
  if (value.slice(i + 5, i + 7) !== "\\u") throw new LineError("incomplete Unicode surrogate pair");
  return [String.fromCharCode(unit, hexUnit(value, i + 7)), i + 10];
}

function parseValue(value: string): string {
  let out = "";
  let significant = 0;
  let mode: "normal" | "double" | "single" | "escape" = "normal";
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c.charCodeAt(0) < 32)
      throw new LineError(`0x${c.charCodeAt(0).toString(16).padStart(2, "0")} is an invalid value character`);
    if (c.charCodeAt(0) > 127) {
      if (mode === "escape") throw new LineError("multibyte characters disallowed in escape sequences");
      out += c;
      continue;
    }
    if (mode === "normal") {
      if (c === '"') mode = "double";
      else if (c === "'") mode = "single";
      else if (c === "#") return out.slice(0, significant);
      else {
        out += c;
        if (c !== " ") significant = out.length;
      }
    } else if (mode === "double") {
      if (c === '"') mode = "normal";
      else if (c === "\\") mode = "escape";
      else {
        out += c;
        significant = out.length;
      }
    } else if (mode === "single") {
      if (c === "'") mode = "normal";
      else {
        out += c;
        significant = out.length;
      }
    } else {
      if (c === "u") {
        const [text, last] = unicodeEscape(value, i);
        out += text;
        i = last;
      } else {
        const e = escapes[c];
        if (e === undefined) throw new LineError(`invalid escape sequence: ${JSON.stringify(c)}`);
        out += e;
      }
      significant = out.length;
      mode = "double";
    }
  }
  if (mode === "double") throw new LineError('unmatched "');
  if (mode === "single") throw new LineError("unmatched '");
  if (mode === "escape") throw new LineError("incomplete escape sequence");
  return out;
}

function parseLine(text: string): [string, string] | undefined {
  const line = text.trim();
  if (line === "" || line.startsWith("#")) return undefined;
  const eq = line.indexOf("=");
  if (eq < 0) throw new LineError("missing =");
  let key = line.slice(0, eq).trim();
  if (key.length > "export ".length && key.startsWith("export ")) key = key.slice("export ".length);
  if (key === "") throw new LineError("empty key");
  if (!/^[A-Za-z_]/.test(key)) throw new LineError(`key must start with [A-Za-z_] but found ${JSON.stringify(key[0])}`);
  if (!/^.[A-Za-z0-9/_.]*$/.test(key))
    throw new LineError(`key characters must be [A-Za-z0-9/_.] in ${JSON.stringify(key)}`);
  return [key, parseValue(line.slice(eq + 1).trim())];
}

/** The file's variables; a line that is none is MetadataError naming `what` and the line. */
export function parseEnvFile(text: string, what: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const [i, line] of text.split(/\r?\n/).entries()) {
    try {
      const pair = parseLine(line);
      if (pair) env.set(pair[0], pair[1]);
    } catch (err) {
      if (!(err instanceof LineError)) throw err;
      throw new MetadataError(`${what}: line ${i + 1}: ${err.message}`, { line: i + 1 });
    }
  }
  return env;
}
