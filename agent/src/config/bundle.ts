// ConfigBundle: the documents of one machine configuration plus the text they came
// from. Talos keeps the bytes it received, so toYaml() gives them back unchanged;
// bundles built from documents (after patching) render the canonical encoding.

import { applyDefaults } from "./defaults.js";
import { V1ALPHA1, type ConfigDocument } from "./document.js";
import { encodeDocuments } from "./encode.js";
import type { OtherDocument } from "./types/documents.js";
import type { MachineTypeName, V1Alpha1Config } from "./types/v1alpha1.js";

export { V1ALPHA1, type ConfigDocument } from "./document.js";

export class ConfigBundle {
  readonly documents: readonly ConfigDocument[];
  readonly warnings: readonly string[];
  private readonly raw: string | undefined;

  constructor(documents: ConfigDocument[], opts: { raw?: string; warnings?: string[] } = {}) {
    this.documents = documents;
    this.raw = opts.raw;
    this.warnings = opts.warnings ?? [];
  }

  /** The v1alpha1 document as written (no defaults), or undefined. */
  v1alpha1(): V1Alpha1Config | undefined {
    return this.documents.find((d) => d.kind === V1ALPHA1)?.value as V1Alpha1Config | undefined;
  }

  /** The v1alpha1 document with what a node assumes for absent keys (see defaults.ts). */
  v1alpha1WithDefaults(): V1Alpha1Config | undefined {
    const doc = this.v1alpha1();
    return doc ? applyDefaults(doc) : undefined;
  }

  /** Documents of one kind (optionally one name). */
  byKind<T extends OtherDocument = OtherDocument>(kind: T["kind"], name?: string): T[] {
    return this.documents
      .filter((d) => d.kind === kind && (name === undefined || d.name === name))
      .map((d) => d.value as unknown as T);
  }

  /** A config is complete for boot when it holds a v1alpha1 document. */
  get completeForBoot(): boolean {
    return this.documents.some((d) => d.kind === V1ALPHA1);
  }

  /** "join" and "" (or absent) read as worker; undefined without a v1alpha1 document. */
  get machineType(): MachineTypeName | undefined {
    const doc = this.v1alpha1();
    if (!doc) return undefined;
    const t = doc.machine?.type ?? "";
    if (t === "init" || t === "controlplane") return t;
    return "worker";
  }

  /** The original text when loaded from text, else the canonical encoding. */
  toYaml(): string {
    return this.raw ?? this.toCanonicalYaml();
  }

  /** The encoding talosctl writes (Go field order, non-omitempty fields present). */
  toCanonicalYaml(): string {
    return encodeDocuments(this.documents);
  }

  /** True when toYaml() returns the bytes the bundle was loaded from. */
  get hasOriginalText(): boolean {
    return this.raw !== undefined;
  }
}
