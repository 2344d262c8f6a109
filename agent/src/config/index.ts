// Public surface of the machine configuration module.
export { ConfigBundle, V1ALPHA1, type ConfigDocument } from "./bundle.js";
export { loadConfig, configText, parseProblems, formatProblems, multiError, type LoadOptions } from "./load.js";
export {
  validateConfig,
  assertValidConfig,
  type ValidateOptions,
  type ValidationResult,
  type RuntimeMode,
} from "./validate.js";
export { applyDefaults, defaults } from "./defaults.js";
export { applyPatches, applyPatchesToBundle, loadPatch, loadPatches, type ConfigPatch } from "./patch/apply.js";
export { strategicMerge } from "./patch/strategic.js";
export { applyJsonPatch, parseJsonPatch, type JsonPatchOp } from "./patch/jsonpatch.js";
export * from "./types/index.js";
