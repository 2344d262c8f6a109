// Public surface of config generation (`gen secrets`, `gen config`, GenerateConfiguration).
export * from "./constants.js";
export * from "./tokens.js";
export * from "./endpoint.js";
export * from "./kubernetes.js";
export * from "./secrets.js";
export * from "./machine-config.js";
export * from "./talosconfig.js";
export * from "./configs.js";
export * from "./request.js";
