import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  MachineTypeId,
  MachineTypeType,
  CONFIG_NAMESPACE,
  type MachineTypeName,
} from "../../resources/catalog/config.js";
import {
  CertSANIds,
  CertSANType,
  OSRootSecretsId,
  OSRootSecretsType,
  SECRETS_NAMESPACE,
  TrustdCertificatesId,
  TrustdCertificatesType,
  type CertSANSpec,
  type OSRootSpec,
  type TrustdCertsSpec,
} from "../../resources/catalog/secrets.js";
import { isControlPlane, renewMs } from "./api.js";
import { issueServerCert } from "./issue.js";

/**
 * TrustdCertificates `trustd` on the control plane: trustd's server certificate
 * from the OS CA for the API SANs (digitalSignature + keyEncipherment, serverAuth,
 * 24 h, renewed at half-life) and the accepted CAs. Nothing on a worker.
 */
export class TrustdController implements Controller {
  readonly name = "secrets.TrustdController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineTypeType, id: MachineTypeId, kind: "weak" as const },
    { namespace: SECRETS_NAMESPACE, type: OSRootSecretsType, id: OSRootSecretsId, kind: "weak" as const },
    { namespace: SECRETS_NAMESPACE, type: CertSANType, id: CertSANIds.api, kind: "weak" as const },
  ];
  readonly outputs = [{ type: TrustdCertificatesType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const type = ctx.get<MachineTypeName>(CONFIG_NAMESPACE, MachineTypeType, MachineTypeId)?.spec;
    const root = ctx.get<OSRootSpec>(SECRETS_NAMESPACE, OSRootSecretsType, OSRootSecretsId)?.spec;
    const sans = ctx.get<CertSANSpec>(SECRETS_NAMESPACE, CertSANType, CertSANIds.api)?.spec;
    if (!isControlPlane(type) || !root?.issuingCA) {
      ctx.destroyOthers(SECRETS_NAMESPACE, TrustdCertificatesType, new Set());
      return;
    }
    if (!sans) return;
    const server = await issueServerCert(root.issuingCA, sans, ["digitalSignature", "keyEncipherment"]);
    ctx.modify<TrustdCertsSpec>(SECRETS_NAMESPACE, TrustdCertificatesType, TrustdCertificatesId, () => ({
      server,
      acceptedCAs: root.acceptedCAs,
    }));
    ctx.requeueAfter(renewMs);
  }
}
