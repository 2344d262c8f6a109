// loadConfig: multi-document machine configuration text -> ConfigBundle. Collects
// every problem (YAML syntax, unknown kinds, missing kind, unknown keys, wrong value
// kinds, bad machine type) and throws them together as one ConfigParseError.

import { gunzipSync } from "node:zlib";
import { isMap, isScalar, LineCounter, parseAllDocuments, type Document, type Scalar, type YAMLMap } from "yaml";
import { ConfigParseError } from "../errors.js";
import { ConfigBundle, V1ALPHA1, type ConfigDocument } from "./bundle.js";
import { decodeNode } from "./decode.js";
import { isKnownKind, schemaOf } from "./schemas.js";
import { namedKinds } from "./types/documents-schema.js";

export interface LoadOptions {
  /** Strategic-merge patch documents: `$patch: delete` allowed. */
  patch?: boolean;
}

const v1alpha1Keys = ["machine", "cluster", "debug", "persist"];
const machineTypes = new Set(["init", "controlplane", "worker", "join", ""]);

/** Formats problems exactly as Go's go-multierror does (Talos's validation errors read this way). */
export function multiError(problems: readonly string[]): string {
  const n = problems.length;
  return `${n} ${n === 1 ? "error" : "errors"} occurred:\n${problems.map((p) => `\t* ${p}`).join("\n")}\n\n`;
}

/** A parse error's message: a single problem as it is, several as multiError's list without its closing blank line. */
export function formatProblems(problems: readonly string[]): string {
  return problems.length === 1 ? problems[0]! : multiError(problems).slice(0, -2);
}

export function parseError(problems: string[]): ConfigParseError {
  return new ConfigParseError(formatProblems(problems), { problems });
}

/** The problems carried by a ConfigParseError from loadConfig. */
export function parseProblems(err: ConfigParseError): string[] {
  const p = err.fields.problems;
  return Array.isArray(p) ? (p as string[]) : [err.message];
}

function topKeys(map: YAMLMap): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const pair of map.items) {
    const key = isScalar(pair.key) ? String((pair.key as Scalar).value) : String(pair.key);
    out.set(key, isScalar(pair.value) ? (pair.value as Scalar).value : pair.value);
  }
  return out;
}

function firstLine(message: string): string {
  return message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
}

/** Config bytes as text: gzip is detected by its magic (platform sources may compress). */
export function configText(input: string | Buffer): string {
  if (typeof input === "string") return input;
  if (input.length >= 2 && input[0] === 0x1f && input[1] === 0x8b) {
    try {
      return gunzipSync(input).toString("utf8");
    } catch (err) {
      throw parseError([`config looks gzip-compressed but does not decompress: ${(err as Error).message}`]);
    }
  }
  return input.toString("utf8");
}

export function loadConfig(input: string | Buffer, opts: LoadOptions = {}): ConfigBundle {
  const text = configText(input);
  const lineCounter = new LineCounter();
  const parsed: Document[] = parseAllDocuments(text, { lineCounter, uniqueKeys: true, merge: true }) as Document[];
  const problems: string[] = [];
  const warnings: string[] = [];
  const documents: ConfigDocument[] = [];
  const seen = new Set<string>();

  for (const [index, doc] of (Array.isArray(parsed) ? parsed : []).entries()) {
    if (doc.errors.length > 0) {
      for (const e of doc.errors) {
        const pos = e.linePos?.[0];
        problems.push(`yaml: ${pos ? `line ${pos.line}, column ${pos.col}: ` : ""}${firstLine(e.message)}`);
      }
      continue;
    }
    const contents = doc.contents;
    if (contents === null || (isScalar(contents) && (contents as Scalar).value === null)) continue; // empty document
    if (!isMap(contents)) {
      problems.push(`document ${index + 1}: expected a mapping, got ${isScalar(contents) ? "a scalar" : "a list"}`);
      continue;
    }
    const keys = topKeys(contents);
    const kind = keys.get("kind");
    const isV1alpha1 =
      (keys.get("version") === V1ALPHA1 && kind === undefined) || v1alpha1Keys.some((k) => keys.has(k));
    let docKind: string;
    let prefix: string;
    if (isV1alpha1) {
      docKind = V1ALPHA1;
      prefix = "";
    } else {
      if (kind === undefined || kind === null || kind === "") {
        problems.push(`document ${index + 1}: missing kind`);
        continue;
      }
      const apiVersion = keys.get("apiVersion");
      if (typeof kind !== "string" || !isKnownKind(kind) || apiVersion !== V1ALPHA1) {
        problems.push(
          `document ${index + 1}: unknown document kind ${JSON.stringify(String(kind))} (apiVersion ${JSON.stringify(String(apiVersion ?? ""))})`,
        );
        continue;
      }
      docKind = kind;
      prefix = `${kind}: `;
    }

    const decoded = decodeNode(contents, schemaOf(docKind), { lineCounter, allowPatchDirectives: opts.patch, doc });
    if (decoded.unknownKeys.length > 0) {
      const list = decoded.unknownKeys.map((u) => `${u.path}${u.line ? ` (line ${u.line})` : ""}`).join(", ");
      problems.push(`${prefix}unknown keys found during decoding: ${list}`);
    }
    for (const p of decoded.problems)
      problems.push(`${prefix}${p.path}: ${p.message}${p.line ? ` (line ${p.line})` : ""}`);
    const value = (decoded.value ?? {}) as Record<string, unknown>;

    let name: string | undefined;
    if (namedKinds.has(docKind)) name = typeof value.name === "string" ? value.name : "";
    const identity = `${docKind}/${name ?? ""}`;
    if (seen.has(identity)) {
      const what = docKind === V1ALPHA1 ? "v1alpha1" : docKind;
      problems.push(`duplicate ${what} document${name ? ` named ${JSON.stringify(name)}` : ""}`);
      continue;
    }
    seen.add(identity);

    if (docKind === V1ALPHA1) {
      const machine = value.machine as Record<string, unknown> | null | undefined;
      const type = machine?.type;
      if (typeof type === "string" && !machineTypes.has(type)) {
        problems.push(`.machine.type: unknown machine type ${JSON.stringify(type)}`);
      } else if (!opts.patch && machine && (type === "join" || type === "" || type === undefined)) {
        warnings.push(`.machine.type: use "worker" instead of ${JSON.stringify(type ?? "")} for machine type`);
      }
    }
    documents.push({ kind: docKind, apiVersion: V1ALPHA1, ...(name !== undefined ? { name } : {}), value });
  }

  if (problems.length === 0 && documents.length === 0 && !opts.patch)
    problems.push("config is empty: no documents found");
  if (problems.length > 0) throw parseError(problems);
  return new ConfigBundle(documents, { raw: text, warnings });
}
