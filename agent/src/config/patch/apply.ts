// Loading and applying config patches the way talosctl does (`configpatcher.LoadPatches`
// + `Apply`): a patch whose YAML/JSON is a list is an RFC 6902 JSON patch, anything
// else is a strategic-merge patch of one or more documents.

import { parseAllDocuments } from "yaml";
import { InvalidInputError } from "../../errors.js";
import { ConfigBundle, V1ALPHA1 } from "../bundle.js";
import { encodeDocument, toYamlText } from "../encode.js";
import { loadConfig } from "../load.js";
import { applyJsonPatch, parseJsonPatch, type JsonPatchOp } from "./jsonpatch.js";
import { strategicMerge } from "./strategic.js";

export type ConfigPatch = { type: "json"; ops: JsonPatchOp[] } | { type: "strategic"; bundle: ConfigBundle };

/** Tells a JSON patch from a strategic-merge patch and decodes it. */
export function loadPatch(text: string): ConfigPatch {
  const docs = parseAllDocuments(text);
  const first = Array.isArray(docs) ? docs[0] : undefined;
  if (first && first.errors.length === 0) {
    const raw: unknown = first.toJS();
    if (Array.isArray(raw)) return { type: "json", ops: parseJsonPatch(raw) };
  }
  return { type: "strategic", bundle: loadConfig(text, { patch: true }) };
}

export function loadPatches(texts: readonly string[]): ConfigPatch[] {
  return texts.map(loadPatch);
}

/**
 * Applies patches in order; the result is re-decoded (unknown keys rejected) after each
 * JSON patch. The returned bundle's toYaml() is the canonical (talosctl) encoding.
 */
export function applyPatchesToBundle(bundle: ConfigBundle, patches: readonly ConfigPatch[]): ConfigBundle {
  let docs = [...bundle.documents];
  for (const patch of patches) {
    if (patch.type === "strategic") {
      docs = strategicMerge(docs, patch.bundle.documents);
      continue;
    }
    if (docs.length !== 1 || docs[0].kind !== V1ALPHA1) {
      throw new InvalidInputError("JSON6902 patches are not supported for multi-document machine configuration");
    }
    // Like Talos, the JSON patch sees the canonical encoding (so `/machine/type` exists even when unset).
    const patched = applyJsonPatch(encodeDocument(docs[0]), patch.ops);
    docs = [...loadConfig(toYamlText(patched)).documents];
  }
  // Re-load the result: warnings (e.g. machine type) reflect the patched config, and
  // toYaml() gives the encoding talosctl writes.
  return loadConfig(new ConfigBundle(docs).toCanonicalYaml());
}

/**
 * Applies patch texts to a config text and returns the patched config in the encoding
 * talosctl writes. With no patches the text comes back unchanged.
 */
export function applyPatches(configText: string | Buffer, patchTexts: readonly string[]): string {
  const text = typeof configText === "string" ? configText : configText.toString("utf8");
  if (patchTexts.length === 0) return text;
  return applyPatchesToBundle(loadConfig(text), loadPatches(patchTexts)).toYaml();
}
