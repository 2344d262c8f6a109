// Typed views of the non-v1alpha1 documents of Talos v1.7.

export interface DocumentHeader<K extends string> {
  apiVersion: "v1alpha1";
  kind: K;
}

export interface ExtensionServiceConfig extends DocumentHeader<"ExtensionServiceConfig"> {
  name: string;
  configFiles?: { content: string; mountPath: string }[];
  environment?: string[];
}

export interface WatchdogTimerConfig extends DocumentHeader<"WatchdogTimerConfig"> {
  device: string;
  /** Go duration text, e.g. "3m0s". */
  timeout?: string;
}

export interface SideroLinkConfig extends DocumentHeader<"SideroLinkConfig"> {
  apiUrl: string;
}

export interface NetworkRuleConfig extends DocumentHeader<"NetworkRuleConfig"> {
  name: string;
  portSelector: { ports: (number | string)[]; protocol: "tcp" | "udp" | "icmp" | "icmpv6" };
  ingress: { subnet: string; except?: string }[];
}

export interface NetworkDefaultActionConfig extends DocumentHeader<"NetworkDefaultActionConfig"> {
  ingress: "accept" | "block";
}

export interface KmsgLogConfig extends DocumentHeader<"KmsgLogConfig"> {
  name: string;
  url: string;
}

export interface EventSinkConfig extends DocumentHeader<"EventSinkConfig"> {
  /** "host:port" of the gRPC event sink. */
  endpoint: string;
}

export type OtherDocument =
  | ExtensionServiceConfig
  | WatchdogTimerConfig
  | SideroLinkConfig
  | NetworkRuleConfig
  | NetworkDefaultActionConfig
  | KmsgLogConfig
  | EventSinkConfig;

export type OtherDocumentKind = OtherDocument["kind"];
