import type { ConfigBundle } from "../../config/bundle.js";
import { pemFromBase64 } from "../../pki/pem.js";
import { splitSANs } from "../../pki/sans.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import {
  OSRootSecretsId,
  OSRootSecretsType,
  SECRETS_NAMESPACE,
  type OSRootSpec,
} from "../../resources/catalog/secrets.js";

// The Kubernetes service through which pods reach the node API (features.kubernetesTalosAPIAccess).
const talosAPIServiceNames = ["talos", "talos.default"];

/**
 * OSRootSecrets from the active configuration, as Talos derives them: the issuing
 * CA only where the config holds its key (control plane), accepted CAs =
 * machine.acceptedCAs + machine.ca's certificate, certSANs split into IPs and
 * DNS names, the machine token.
 */
export class RootController implements Controller {
  readonly name = "secrets.RootController";
  readonly inputs = [{ namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active }];
  readonly outputs = [{ type: OSRootSecretsType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const cfg = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec;
    const doc = cfg?.v1alpha1WithDefaults();
    if (!doc?.machine || !doc.cluster) {
      ctx.destroyOthers(SECRETS_NAMESPACE, OSRootSecretsType, new Set());
      return;
    }
    const machine = doc.machine;
    const ca = { crt: pemFromBase64(machine.ca?.crt), key: pemFromBase64(machine.ca?.key) };
    const sans = splitSANs(machine.certSANs ?? []);
    const spec: OSRootSpec = {
      ...(ca.crt && ca.key ? { issuingCA: ca } : {}),
      acceptedCAs: [...(machine.acceptedCAs ?? []).map((c) => pemFromBase64(c.crt)), ca.crt]
        .filter((crt) => crt !== "")
        .map((crt) => ({ crt })),
      certSANIPs: sans.ipAddresses,
      certSANDNSNames: [
        ...sans.dnsNames,
        ...(machine.features?.kubernetesTalosAPIAccess?.enabled ? talosAPIServiceNames : []),
      ],
      token: machine.token ?? "",
    };
    ctx.modify<OSRootSpec>(SECRETS_NAMESPACE, OSRootSecretsType, OSRootSecretsId, () => spec);
  }
}
