// etcd's command line as Talos's system/services/etcd.go builds it: a fixed set of flags the
// config's extraArgs may not override (refused as Talos's argsbuilder refuses them), the
// cluster-forming flags only when the config does not set them, all as sorted `--key=value`.
import { InvalidInputError } from "../../errors.js";
import type { EtcdSpecSpec } from "../../resources/catalog/etcd.js";
import { etcdClientPort, etcdPeerPort, etcdPkiFiles as f } from "../../sys/etcd/paths.js";
import path from "node:path";

export interface EtcdPorts {
  client: number;
  peer: number;
}
export const talosEtcdPorts: EtcdPorts = { client: etcdClientPort, peer: etcdPeerPort };

/** https://host:port, IPv6 hosts bracketed. */
export const etcdURL = (addr: string, port: number): string =>
  `https://${addr.includes(":") ? `[${addr}]` : addr}:${port}`;
export const etcdURLs = (addrs: readonly string[], port: number): string[] => addrs.map((a) => etcdURL(a, port));
/** `name=url,...` for every URL. */
export const clusterURLs = (name: string, urls: readonly string[]): string => urls.map((u) => `${name}=${u}`).join(",");

/** How this start forms or joins the cluster. */
export type EtcdClusterMode =
  /** Data on disk: the member restarts as it was. */
  | { kind: "existing" }
  /** A new one-member cluster: `talosctl bootstrap` (or an init node's first start). */
  | { kind: "new" }
  /** A member added to a running cluster: `initialCluster` as the member list names it. */
  | { kind: "join"; initialCluster: string };

export interface EtcdArgsInput {
  spec: EtcdSpecSpec;
  mode: EtcdClusterMode;
  /** The data and PKI directories as etcd sees them (Talos: /var/lib/etcd, /system/secrets/etcd). */
  dataDir: string;
  pkiDir: string;
  ports?: EtcdPorts;
  /** A (deprecated) init node: it names its state and peer URLs even when its data exists. */
  init?: boolean;
}

/** An extraArgs key Talos refuses: `extra arg "<key>" is not allowed`. */
export class EtcdExtraArgError extends InvalidInputError {}

/** The flags after the program name. */
export function etcdArgs(input: EtcdArgsInput): string[] {
  const { spec, mode } = input;
  const ports = input.ports ?? talosEtcdPorts;
  const pki = (name: string) => path.join(input.pkiDir, name);
  const fixed: Record<string, string> = {
    name: spec.name,
    "auto-tls": "false",
    "peer-auto-tls": "false",
    "data-dir": input.dataDir,
    "listen-peer-urls": etcdURLs(spec.listenPeerAddresses, ports.peer).join(","),
    "listen-client-urls": etcdURLs(spec.listenClientAddresses, ports.client).join(","),
    "client-cert-auth": "true",
    "cert-file": pki(f.serverCert),
    "key-file": pki(f.serverKey),
    "trusted-ca-file": pki(f.caCert),
    "peer-client-cert-auth": "true",
    "peer-cert-file": pki(f.peerCert),
    "peer-key-file": pki(f.peerKey),
    "peer-trusted-ca-file": pki(f.caCert),
    "experimental-initial-corrupt-check": "true",
    "experimental-watch-progress-notify-interval": "5s",
    "experimental-compact-hash-check-enabled": "true",
  };
  const extra = spec.extraArgs;
  const denied = Object.keys(extra)
    .filter((k) => k in fixed)
    .sort();
  if (denied.length > 0)
    throw new EtcdExtraArgError(`extra arg ${JSON.stringify(denied[0])} is not allowed`, { key: denied[0] });
  const set = (key: string, value: () => string) => {
    if (!(key in extra)) fixed[key] = value();
  };
  const peerURLs = () => etcdURLs(spec.advertisedAddresses, ports.peer).join(",");
  if (mode.kind !== "existing" || input.init) {
    set("initial-cluster-state", () => (mode.kind === "new" ? "new" : "existing"));
    set("initial-advertise-peer-urls", peerURLs);
  }
  if (mode.kind !== "existing") {
    set("initial-cluster", () =>
      mode.kind === "join"
        ? mode.initialCluster
        : clusterURLs(spec.name, etcdURLs(spec.advertisedAddresses, ports.peer)),
    );
  }
  set("advertise-client-urls", () => etcdURLs(spec.advertisedAddresses, ports.client).join(","));
  const all = { ...fixed, ...extra };
  return Object.keys(all)
    .sort()
    .map((k) => `--${k}=${all[k]}`);
}
