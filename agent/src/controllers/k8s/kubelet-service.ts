// k8s.KubeletServiceController: starts the kubelet service once EPHEMERAL is mounted, the node
// identity (and so /etc/machine-id, which the kubelet mounts) is there, CRI is registered, and
// KubeletSpec and KubeletSecrets exist, and restarts it whenever either changes, as
// Talos's KubeletServiceController: the service stopped, its files rewritten, a client
// certificate issued for another node name or by another CA removed (with the kubeconfig
// made from it), the self-signed serving certificate removed so the kubelet renews it,
// the kubeconfig pointed at the current endpoint and CAs, then the service started.

import { X509Certificate } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { parse, stringify } from "yaml";
import { decodePemBlocks } from "../../pki/pem.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  K8S_NAMESPACE,
  KubeletId,
  KubeletSecretsType,
  KubeletSpecType,
  type KubeletSecretsSpec,
  type KubeletSpecSpec,
} from "../../resources/catalog/k8s-kubelet.js";
import { IdentityType } from "../../resources/catalog/cluster.js";
import { MountStatusType, RUNTIME_NAMESPACE, ServiceType } from "../../resources/catalog/runtime.js";
import { CLUSTER_NAMESPACE, LocalIdentityId } from "../cluster/node-identity.js";
import { SECRETS_NAMESPACE } from "../../resources/catalog/secrets.js";
import { kubeletFiles, writeKubeletFiles } from "../../services/definitions/kubelet.js";
import { kubeletConstants as k } from "./kubelet-configuration.js";

/** What the controller needs from the service supervisor for the kubelet. */
export interface KubeletServiceManager {
  isRunning(): boolean;
  /**
   * Starts the kubelet service (registering it the first time). Resolves once the start is
   * asked for, not once the kubelet runs: its wait for CRI must not hold this controller.
   */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface KubeletServiceControllerOptions {
  services: KubeletServiceManager;
  /** Where the node's filesystem is ("/" on a node). */
  root: string;
  /** machined runs in a container, where EPHEMERAL is always there. */
  container: boolean;
}

const exists = (p: string) =>
  fs.access(p).then(
    () => true,
    () => false,
  );

/** The kubelet's client certificate (the first that is not a CA), if it has one. */
async function clientCertificate(file: string): Promise<X509Certificate | undefined> {
  const text = await fs
    .readFile(file, "utf8")
    .catch((err: NodeJS.ErrnoException) => (err.code === "ENOENT" ? undefined : Promise.reject(err)));
  if (text === undefined) return undefined;
  for (const block of decodePemBlocks(text)) {
    if (block.label !== "CERTIFICATE") continue;
    const cert = new X509Certificate(block.der);
    if (!cert.ca) return cert;
  }
  return undefined;
}

/** Whether the client certificate names this node (when Talos names it) and is signed by an accepted CA. */
export function clientCertificateValid(
  cert: X509Certificate,
  expectedNodename: string,
  acceptedCAs: readonly string[],
): boolean {
  if (expectedNodename && !cert.subject.split("\n").includes(`CN=system:node:${expectedNodename}`)) return false;
  return acceptedCAs.some((pem) => {
    const ca = new X509Certificate(pem);
    return cert.checkIssued(ca) && cert.verify(ca.publicKey);
  });
}

export class KubeletServiceController implements Controller {
  readonly name = "k8s.KubeletServiceController";
  readonly inputs = [
    { namespace: K8S_NAMESPACE, type: KubeletSpecType, id: KubeletId, kind: "weak" as const },
    { namespace: SECRETS_NAMESPACE, type: KubeletSecretsType, id: KubeletId, kind: "weak" as const },
    { namespace: RUNTIME_NAMESPACE, type: MountStatusType, id: "EPHEMERAL", kind: "weak" as const },
    { namespace: CLUSTER_NAMESPACE, type: IdentityType, id: LocalIdentityId, kind: "weak" as const },
    { namespace: RUNTIME_NAMESPACE, type: ServiceType, id: "cri", kind: "weak" as const },
  ];
  readonly outputs = [];
  /** The spec and secrets the running kubelet was started with. */
  private startedWith: string | undefined;

  constructor(private readonly opts: KubeletServiceControllerOptions) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    if (!this.opts.container && !ctx.get(RUNTIME_NAMESPACE, MountStatusType, "EPHEMERAL")) return;
    if (!ctx.get(CLUSTER_NAMESPACE, IdentityType, LocalIdentityId)) return;
    // The boot registers CRI with the other services once the overlays that make /etc/kubernetes
    // writable are mounted, a phase after EPHEMERAL: the kubelet's files wait for them.
    if (!ctx.get(RUNTIME_NAMESPACE, ServiceType, "cri")) return;
    const spec = ctx.get<KubeletSpecSpec>(K8S_NAMESPACE, KubeletSpecType, KubeletId)?.spec;
    const secrets = ctx.get<KubeletSecretsSpec>(SECRETS_NAMESPACE, KubeletSecretsType, KubeletId)?.spec;
    if (!spec || !secrets) return;
    const inputs = JSON.stringify([spec, secrets]);
    if (inputs === this.startedWith) return;

    const root = this.opts.root;
    await writeKubeletFiles(root, kubeletFiles(spec, secrets));
    if (this.opts.services.isRunning()) await this.opts.services.stop();
    await this.refreshClientCertificate(ctx, spec.expectedNodename, secrets.acceptedCAs);
    for (const name of ["kubelet.crt", "kubelet.key"]) await fs.rm(path.join(root, k.pkiDir, name), { force: true });
    await this.updateKubeconfig(ctx, secrets);
    await this.opts.services.start();
    this.startedWith = inputs;
  }

  private async refreshClientCertificate(
    ctx: ControllerContext,
    expectedNodename: string,
    acceptedCAs: readonly string[],
  ): Promise<void> {
    const pki = path.join(this.opts.root, k.pkiDir);
    const cert = await clientCertificate(path.join(pki, "kubelet-client-current.pem"));
    if (!cert || clientCertificateValid(cert, expectedNodename, acceptedCAs)) return;
    ctx.log.info("kubelet client certificate does not match the node name or the accepted CAs, removing", {
      subject: cert.subject,
    });
    await fs.rm(pki, { recursive: true, force: true });
    await fs.rm(path.join(this.opts.root, k.kubeconfig), { force: true });
  }

  /** Points an existing kubeconfig's current cluster at the endpoint and CAs of KubeletSecrets. */
  private async updateKubeconfig(ctx: ControllerContext, secrets: KubeletSecretsSpec): Promise<void> {
    const file = path.join(this.opts.root, k.kubeconfig);
    if (!(await exists(file))) return;
    type Named<T> = { name: string } & T;
    // A kubeconfig's shape; every field is read through optional chaining, so a malformed one is only left alone.
    const config = parse(await fs.readFile(file, "utf8")) as {
      "current-context"?: string;
      contexts?: Named<{ context?: { cluster?: string } }>[];
      clusters?: Named<{ cluster?: Record<string, unknown> }>[];
    };
    const context = config.contexts?.find((c) => c.name === config["current-context"]);
    const cluster = config.clusters?.find((c) => c.name === context?.context?.cluster);
    if (!cluster?.cluster) {
      ctx.log.error("kubelet kubeconfig has no current context or cluster; left as it is", {
        context: config["current-context"],
      });
      return;
    }
    cluster.cluster.server = secrets.endpoint;
    cluster.cluster["certificate-authority-data"] = Buffer.from(secrets.acceptedCAs.join(""), "utf8").toString(
      "base64",
    );
    await fs.writeFile(file, stringify(config), { mode: 0o600 });
  }
}
