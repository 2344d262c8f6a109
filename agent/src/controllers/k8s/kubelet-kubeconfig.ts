// The kubelet's own kubeconfig as KubeClient credentials. The kubelet writes it after
// its TLS bootstrap naming its client certificate by path (the rotating
// kubelet-client-current.pem, certificate and key in one file) where Talos's other
// kubeconfigs carry the PEM inline; the files named are read into the *-data fields.

import { readFile } from "node:fs/promises";
import { parse, stringify } from "yaml";
import type { KubeCredentials } from "./kube-client.js";
import { credentialsFromKubeconfig } from "./kubeconfig-credentials.js";

type Fields = Record<string, unknown>;

/** The `*-data` field for each file field of `section` (`client-certificate` -> `client-certificate-data`). */
async function inlineFiles(section: Fields | undefined, fields: readonly string[]): Promise<void> {
  if (!section) return;
  for (const field of fields) {
    const file = section[field];
    if (typeof file !== "string" || section[`${field}-data`] !== undefined) continue;
    section[`${field}-data`] = (await readFile(file)).toString("base64");
  }
}

export async function credentialsFromKubeletKubeconfig(text: string): Promise<KubeCredentials> {
  // A kubeconfig is YAML of nested maps; only the fields named below are touched.
  const cfg = (parse(text) ?? {}) as {
    clusters?: { cluster?: Fields }[];
    users?: { user?: Fields }[];
  };
  for (const c of cfg.clusters ?? []) await inlineFiles(c.cluster, ["certificate-authority"]);
  for (const u of cfg.users ?? []) await inlineFiles(u.user, ["client-certificate", "client-key"]);
  return credentialsFromKubeconfig(stringify(cfg));
}

/** The credentials of the kubeconfig at `path`; undefined while the kubelet has not written it. */
export async function readKubeletCredentials(path: string): Promise<KubeCredentials | undefined> {
  const text = await readFile(path, "utf8").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw err;
  });
  return text === undefined ? undefined : credentialsFromKubeletKubeconfig(text);
}
