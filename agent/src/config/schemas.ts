// Which schema describes a document kind.

import { documentSchemas } from "./types/documents-schema.js";
import type { Schema } from "./types/schema.js";
import { v1alpha1Schema } from "./types/v1alpha1-schema.js";

export function schemaOf(kind: string): Schema {
  if (kind === "v1alpha1") return v1alpha1Schema;
  const s = documentSchemas[kind];
  if (!s) throw new Error(`no schema for document kind ${JSON.stringify(kind)}`);
  return s;
}

export function isKnownKind(kind: string): boolean {
  return kind in documentSchemas;
}
