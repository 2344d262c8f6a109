// One decoded configuration document.

export const V1ALPHA1 = "v1alpha1";

/** One decoded document. `kind` is "v1alpha1" for the main machine config document. */
export interface ConfigDocument {
  kind: string;
  apiVersion: string;
  /** for kinds that coexist by name (ExtensionServiceConfig, NetworkRuleConfig, KmsgLogConfig) */
  name?: string;
  /** decoded value (plain JSON-like data, keys as on the wire) */
  value: Record<string, unknown>;
}
