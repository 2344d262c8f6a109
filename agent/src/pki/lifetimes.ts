// Certificate lifetimes Talos issues with, apart from certificates.ts so that using them loads no X.509 library.
export const hourMs = 60 * 60 * 1000;
/** 87600 h, the lifetime of every CA `gen config` creates. */
export const caLifetimeMs = 87600 * hourMs;
/** 8760 h, the lifetime of the talosconfig client certificate. */
export const clientCertLifetimeMs = 8760 * hourMs;
/** 8760 h, the lifetime of the Kubernetes certificates Talos issues (API server, kubelet client, kubeconfigs). */
export const kubernetesCertLifetimeMs = 8760 * hourMs;
/** 24 h, the lifetime of apid/trustd/maintenance server certificates and CSR-signed ones. */
export const serverCertLifetimeMs = 24 * hourMs;
