import type { ConfigBundle } from "../../config/bundle.js";
import type { V1Alpha1Config } from "../../config/types/v1alpha1.js";
import { InvalidInputError } from "../../errors.js";
import { pemFromBase64 } from "../../pki/pem.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  KubernetesRootSecretsId,
  KubernetesRootSecretsType,
  type KubernetesRootSpec,
} from "../../resources/catalog/k8s-secrets.js";
import { SECRETS_NAMESPACE } from "../../resources/catalog/secrets.js";
import { isControlPlane } from "./api.js";
import { nthAddress } from "../k8s/service-cidrs.js";

const defaultLocalAPIServerPort = 6443;
const defaultKubePrismPort = 7445;
const defaultDNSDomain = "cluster.local";
const defaultServiceSubnets = ["10.96.0.0/12"];

/** The KubernetesRoot spec of a control plane's configuration (Talos's RootKubernetesController). */
export function kubernetesRootFromConfig(doc: V1Alpha1Config): KubernetesRootSpec {
  const cluster = doc.cluster ?? {};
  const kubePrism = doc.machine?.features?.kubePrism;
  const localEndpoint = kubePrism?.enabled
    ? `https://127.0.0.1:${kubePrism.port || defaultKubePrismPort}`
    : `https://localhost:${cluster.controlPlane?.localAPIServerPort || defaultLocalAPIServerPort}`;
  const aggregatorCA = { crt: pemFromBase64(cluster.aggregatorCA?.crt), key: pemFromBase64(cluster.aggregatorCA?.key) };
  if (!aggregatorCA.crt) throw new InvalidInputError("missing cluster.aggregatorCA secret");
  const ca = { crt: pemFromBase64(cluster.ca?.crt), key: pemFromBase64(cluster.ca?.key) };
  const acceptedCAs = [...(cluster.acceptedCAs ?? []).map((c) => pemFromBase64(c.crt)), ca.crt]
    .filter((crt) => crt !== "")
    .map((crt) => ({ crt }));
  if (acceptedCAs.length === 0) throw new InvalidInputError("missing cluster.CA secret");
  const [tokenID = "", tokenSecret = ""] = (cluster.token ?? "").split(".");
  const serviceSubnets = cluster.network?.serviceSubnets?.length
    ? cluster.network.serviceSubnets
    : defaultServiceSubnets;
  return {
    name: cluster.clusterName ?? "",
    endpoint: cluster.controlPlane?.endpoint ?? "",
    localEndpoint,
    certSANs: cluster.apiServer?.certSANs ?? [],
    apiServerIPs: serviceSubnets.map((cidr) => nthAddress(cidr, 1)),
    dnsDomain: cluster.network?.dnsDomain || defaultDNSDomain,
    ...(ca.crt && ca.key ? { issuingCA: ca } : {}),
    acceptedCAs,
    serviceAccount: pemFromBase64(cluster.serviceAccount?.key),
    aggregatorCA,
    aesCBCEncryptionSecret: cluster.aescbcEncryptionSecret ?? "",
    bootstrapTokenID: tokenID,
    bootstrapTokenSecret: tokenSecret,
    secretboxEncryptionSecret: cluster.secretboxEncryptionSecret ?? "",
  };
}

/** KubernetesRootSecrets `k8s` from the active configuration, on control planes only. */
export class RootKubernetesController implements Controller {
  readonly name = "secrets.RootKubernetesController";
  readonly inputs = [{ namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active }];
  readonly outputs = [{ type: KubernetesRootSecretsType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const cfg = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec;
    const doc = cfg?.v1alpha1WithDefaults();
    if (!doc?.machine || !doc.cluster || !isControlPlane(cfg?.machineType)) {
      ctx.destroyOthers(SECRETS_NAMESPACE, KubernetesRootSecretsType, new Set());
      return;
    }
    const spec = kubernetesRootFromConfig(doc);
    ctx.modify<KubernetesRootSpec>(SECRETS_NAMESPACE, KubernetesRootSecretsType, KubernetesRootSecretsId, () => spec);
  }
}
