// Public surface of the PKI module.
export * from "./pem.js";
export * from "./keys.js";
export * from "./certificates.js";
export * from "./csr.js";
export * from "./fingerprint.js";
export * from "./tls.js";
export * from "./kubeconfig.js";
