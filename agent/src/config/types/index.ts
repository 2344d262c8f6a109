export * from "./v1alpha1.js";
export * from "./documents.js";
export { v1alpha1Schema } from "./v1alpha1-schema.js";
export { documentSchemas, namedKinds } from "./documents-schema.js";
export type { Schema, Field, ValueCheck, ListMerge } from "./schema.js";
