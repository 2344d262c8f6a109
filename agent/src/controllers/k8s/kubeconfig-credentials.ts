// A kubeconfig's current context as KubeClient credentials (server, CA and client
// certificate from the *-data fields Talos's kubeconfigs carry), with Talos's
// force-endpoint override (host[:port], port 6443 when none is given).

import { parse } from "yaml";
import { InvalidInputError } from "../../errors.js";
import type { KubeCredentials } from "./kube-client.js";

interface Kubeconfig {
  "current-context"?: string;
  clusters?: { name: string; cluster: { server?: string; "certificate-authority-data"?: string } }[];
  users?: { name: string; user: { "client-certificate-data"?: string; "client-key-data"?: string } }[];
  contexts?: { name: string; context: { cluster?: string; user?: string } }[];
}

const fromBase64 = (s: string | undefined): string => Buffer.from(s ?? "", "base64").toString("utf8");

export function credentialsFromKubeconfig(text: string, forceEndpoint = ""): KubeCredentials {
  const cfg = (parse(text) ?? {}) as Kubeconfig;
  const context = cfg.contexts?.find((c) => c.name === cfg["current-context"])?.context;
  const cluster = cfg.clusters?.find((c) => c.name === context?.cluster)?.cluster;
  const user = cfg.users?.find((u) => u.name === context?.user)?.user;
  if (!cluster?.server || !user)
    throw new InvalidInputError(
      `kubeconfig: no cluster or user for context ${JSON.stringify(cfg["current-context"] ?? "")}`,
    );
  return {
    server: forceEndpoint ? forcedServer(forceEndpoint) : cluster.server,
    ca: fromBase64(cluster["certificate-authority-data"]),
    cert: fromBase64(user["client-certificate-data"]),
    key: fromBase64(user["client-key-data"]),
  };
}

/** `https://host:port` for a force endpoint given as host, host:port or https://host[:port]. */
function forcedServer(endpoint: string): string {
  const bare = endpoint.replace(/^https:\/\//, "");
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(bare) ?? /^([^:]+):(\d+)$/.exec(bare);
  const [host, port] = m ? [m[1]!, m[2]!] : [bare.replace(/^\[|\]$/g, ""), "6443"];
  return `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
}
