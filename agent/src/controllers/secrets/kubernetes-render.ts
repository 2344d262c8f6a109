// The files the static control-plane pods read their secrets from, written where Talos
// writes them (/system/secrets/kubernetes/<component>/), each 0400 and owned by the
// user the component runs as, and SecretStatuses `static-pods` once they are in place.
import { promises as fs } from "node:fs";
import path from "node:path";
import { SystemError } from "../../errors.js";
import { parsePrivateKeyPem, talosPublicKeyPem } from "../../pki/keys.js";
import type { PemCertAndKey } from "../../resources/codec.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  CONTROLPLANE_NAMESPACE,
  KubernetesDynamicCertsId,
  KubernetesDynamicCertsType,
  KubernetesRootSecretsId,
  KubernetesRootSecretsType,
  KubernetesSecretsId,
  KubernetesSecretsType,
  SecretsStatusType,
  StaticPodSecretsStatusId,
  type KubernetesCertsSpec,
  type KubernetesDynamicCertsSpec,
  type KubernetesRootSpec,
  type RenderStatusSpec,
} from "../../resources/catalog/k8s-secrets.js";
import { SECRETS_NAMESPACE } from "../../resources/catalog/secrets.js";

// The etcd secrets, by their Talos names: the etcd CA (EtcdRootSpec.etcdCA) and kube-apiserver's etcd client certificate (EtcdCertsSpec.etcdAPIServer).
export const EtcdRootSecretsType = "EtcdRootSecrets.secrets.talos.dev";
export const EtcdSecretsType = "EtcdSecrets.secrets.talos.dev";
export const etcdSecretsId = "etcd";
export interface EtcdRootSecrets {
  etcdCA: PemCertAndKey;
}
export interface EtcdSecrets {
  etcdAPIServer: PemCertAndKey;
}

/** Where each component's secrets live below the system directory, and as whom it runs (Talos's constants). */
export const controlPlaneSecretsDirs = {
  apiServer: { dir: "secrets/kubernetes/kube-apiserver", uid: 65534, gid: 65534 },
  controllerManager: { dir: "secrets/kubernetes/kube-controller-manager", uid: 65535, gid: 65535 },
  scheduler: { dir: "secrets/kubernetes/kube-scheduler", uid: 65536, gid: 65536 },
} as const;

/** One file of a component: its name and contents. */
export interface RenderedFile {
  name: string;
  contents: string;
}

export interface ComponentFiles {
  dir: string;
  uid: number;
  gid: number;
  files: RenderedFile[];
}

/**
 * kube-apiserver's encryption configuration: secretbox (key2) and AES-CBC (key1) when set,
 * then identity; the blank lines are where Talos's template leaves them.
 */
export function encryptionConfig(
  root: Pick<KubernetesRootSpec, "secretboxEncryptionSecret" | "aesCBCEncryptionSecret">,
): string {
  const secretbox = root.secretboxEncryptionSecret
    ? `\n  - secretbox:\n      keys:\n      - name: key2\n        secret: ${root.secretboxEncryptionSecret}\n  `
    : "";
  const aescbc = root.aesCBCEncryptionSecret
    ? `\n  - aescbc:\n      keys:\n      - name: key1\n        secret: ${root.aesCBCEncryptionSecret}\n  `
    : "";
  return `apiVersion: v1\nkind: EncryptionConfig\nresources:\n- resources:\n  - secrets\n  providers:\n  ${secretbox}\n  ${aescbc}\n  - identity: {}\n`;
}

export interface SecretsInputs {
  root: KubernetesRootSpec;
  kubeconfigs: KubernetesCertsSpec;
  certs: KubernetesDynamicCertsSpec;
  etcdRoot: EtcdRootSecrets;
  etcd: EtcdSecrets;
}

/** Every secrets file of the three components, in the order Talos writes them. */
export function controlPlaneSecretFiles(inputs: SecretsInputs): ComponentFiles[] {
  const { root, kubeconfigs, certs, etcdRoot, etcd } = inputs;
  const serviceAccount = parsePrivateKeyPem(root.serviceAccount);
  const pair = (cert: string, key: string, v: PemCertAndKey): RenderedFile[] => [
    { name: cert, contents: v.crt },
    { name: key, contents: v.key },
  ];
  const issuingCA = root.issuingCA ?? { crt: "", key: "" };
  return [
    {
      ...controlPlaneSecretsDirs.apiServer,
      files: [
        { name: "etcd-client-ca.crt", contents: etcdRoot.etcdCA.crt },
        ...pair("etcd-client.crt", "etcd-client.key", etcd.etcdAPIServer),
        { name: "ca.crt", contents: root.acceptedCAs.map((c) => c.crt).join("") },
        ...pair("apiserver.crt", "apiserver.key", certs.apiServer),
        ...pair("apiserver-kubelet-client.crt", "apiserver-kubelet-client.key", certs.apiServerKubeletClient),
        ...pair("service-account.pub", "service-account.key", {
          crt: talosPublicKeyPem(serviceAccount),
          key: root.serviceAccount,
        }),
        { name: "aggregator-ca.crt", contents: root.aggregatorCA.crt },
        ...pair("front-proxy-client.crt", "front-proxy-client.key", certs.frontProxy),
        { name: "encryptionconfig.yaml", contents: encryptionConfig(root) },
      ],
    },
    {
      ...controlPlaneSecretsDirs.controllerManager,
      files: [
        ...pair("ca.crt", "ca.key", issuingCA),
        { name: "service-account.key", contents: root.serviceAccount },
        { name: "kubeconfig", contents: kubeconfigs.controllerManagerKubeconfig },
      ],
    },
    {
      ...controlPlaneSecretsDirs.scheduler,
      files: [{ name: "kubeconfig", contents: kubeconfigs.schedulerKubeconfig }],
    },
  ];
}

/** Writes each component's files under `systemDir`: directories 0755, files 0400 owned by the component. */
export async function writeComponentFiles(systemDir: string, components: readonly ComponentFiles[]): Promise<void> {
  for (const component of components) {
    const dir = path.join(systemDir, component.dir);
    await fs.mkdir(dir, { recursive: true, mode: 0o755 });
    for (const file of component.files) {
      const target = path.join(dir, file.name);
      try {
        await fs.writeFile(target, file.contents, { mode: 0o400 });
        await fs.chmod(target, 0o400);
        await fs.chown(target, component.uid, component.gid);
      } catch (err) {
        throw new SystemError(
          `error writing ${file.name} for ${path.basename(component.dir)}`,
          { path: target },
          { cause: err },
        );
      }
    }
  }
}

/**
 * Talos's RenderSecretsStaticPodController: once the Kubernetes root secrets, kubeconfigs,
 * dynamic certificates and the etcd secrets exist, writes the control-plane components'
 * secret files and reports SecretStatuses `static-pods` ready with the kubeconfigs' version.
 */
export class RenderSecretsStaticPodController implements Controller {
  readonly name = "k8s.RenderSecretsStaticPodController";
  readonly inputs = [
    { namespace: SECRETS_NAMESPACE, type: KubernetesSecretsType, id: KubernetesSecretsId, kind: "weak" as const },
    {
      namespace: SECRETS_NAMESPACE,
      type: KubernetesDynamicCertsType,
      id: KubernetesDynamicCertsId,
      kind: "weak" as const,
    },
    { namespace: SECRETS_NAMESPACE, type: EtcdSecretsType, id: etcdSecretsId, kind: "weak" as const },
    { namespace: SECRETS_NAMESPACE, type: EtcdRootSecretsType, id: etcdSecretsId, kind: "weak" as const },
    {
      namespace: SECRETS_NAMESPACE,
      type: KubernetesRootSecretsType,
      id: KubernetesRootSecretsId,
      kind: "weak" as const,
    },
  ];
  readonly outputs = [{ type: SecretsStatusType }];

  constructor(private readonly systemDir: string) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const kubeconfigs = ctx.get<KubernetesCertsSpec>(SECRETS_NAMESPACE, KubernetesSecretsType, KubernetesSecretsId);
    const certs = ctx.get<KubernetesDynamicCertsSpec>(
      SECRETS_NAMESPACE,
      KubernetesDynamicCertsType,
      KubernetesDynamicCertsId,
    )?.spec;
    const etcd = ctx.get<EtcdSecrets>(SECRETS_NAMESPACE, EtcdSecretsType, etcdSecretsId)?.spec;
    const etcdRoot = ctx.get<EtcdRootSecrets>(SECRETS_NAMESPACE, EtcdRootSecretsType, etcdSecretsId)?.spec;
    const root = ctx.get<KubernetesRootSpec>(
      SECRETS_NAMESPACE,
      KubernetesRootSecretsType,
      KubernetesRootSecretsId,
    )?.spec;
    if (!kubeconfigs || !certs || !etcd || !etcdRoot || !root) return;
    await writeComponentFiles(
      this.systemDir,
      controlPlaneSecretFiles({ root, kubeconfigs: kubeconfigs.spec, certs, etcdRoot, etcd }),
    );
    const version = String(kubeconfigs.metadata.version);
    ctx.modify<RenderStatusSpec>(CONTROLPLANE_NAMESPACE, SecretsStatusType, StaticPodSecretsStatusId, () => ({
      ready: true,
      version,
    }));
  }
}
