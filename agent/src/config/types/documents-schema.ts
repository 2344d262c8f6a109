// Shapes of the other v1.7 documents (all `apiVersion: v1alpha1`, told apart by `kind`).

import { always, any, enumOf, list, obj, str, type Schema } from "./schema.js";

const header = { apiVersion: always(str()), kind: always(str()) };

export const documentSchemas: Record<string, Schema> = {
  ExtensionServiceConfig: obj({
    ...header,
    name: always(str()),
    configFiles: list(obj({ content: always(str()), mountPath: always(str("absPath")) })),
    environment: list(str()),
  }),
  WatchdogTimerConfig: obj({ ...header, device: always(str("absPath")), timeout: str("duration") }),
  SideroLinkConfig: obj({ ...header, apiUrl: always(str("url")) }),
  NetworkRuleConfig: obj({
    ...header,
    name: always(str()),
    portSelector: always(
      obj({
        ports: always(list(any())), // numbers or "low-high" ranges
        protocol: always(enumOf("tcp", "udp", "icmp", "icmpv6")),
      }),
    ),
    ingress: always(list(obj({ subnet: always(str("cidr")), except: str("cidr") }))),
  }),
  NetworkDefaultActionConfig: obj({ ...header, ingress: always(enumOf("accept", "block")) }),
  KmsgLogConfig: obj({ ...header, name: always(str()), url: always(str("url")) }),
  EventSinkConfig: obj({ ...header, endpoint: always(str("hostPort")) }),
};

/** Kinds whose documents are told apart by `name` (several may coexist). */
export const namedKinds: ReadonlySet<string> = new Set([
  "ExtensionServiceConfig",
  "NetworkRuleConfig",
  "KmsgLogConfig",
]);
