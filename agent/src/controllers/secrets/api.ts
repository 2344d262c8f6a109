import type { ConfigBundle } from "../../config/bundle.js";
import { describeError } from "../../errors.js";
import { pemFromBase64 } from "../../pki/index.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { HostnameStatusType, NETWORK_NAMESPACE, NodeAddressIds, NodeAddressType, type HostnameStatusSpec, type NodeAddressSpec } from "../../resources/catalog/network.js";
import { ApiCertificatesId, ApiCertificatesType, SECRETS_NAMESPACE, type APICertsSpec } from "../../resources/catalog/secrets.js";
import { issueApiServerCert } from "./issue.js";

// Talos re-issues the 24 h API certificate every 12 h.
const renewMs = 12 * 3600_000;

const stripPrefix = (cidr: string) => cidr.replace(/\/\d+$/, "");

/**
 * apid's certificates from the active configuration's OS CA, issued again whenever the
 * node's addresses, hostname or certSANs change, and every 12 h. A worker's
 * configuration holds no CA key: its certificate comes from trustd (not served yet),
 * so it gets none here and the controller says so.
 */
export class APIController implements Controller {
  readonly name = "secrets.APIController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active },
    { namespace: NETWORK_NAMESPACE, type: NodeAddressType, id: NodeAddressIds.current, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostnameStatusType, kind: "weak" as const },
  ];
  readonly outputs = [{ type: ApiCertificatesType }];

  /** fallback: where the node is reached when the network controllers publish nothing (the sandbox). */
  constructor(private readonly fallback: () => { addresses: string[]; hostname: string; fqdn: string }) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const cfg = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec;
    const machine = cfg?.v1alpha1WithDefaults()?.machine;
    if (!machine) {
      ctx.destroyOthers(SECRETS_NAMESPACE, ApiCertificatesType, new Set());
      return;
    }
    const osCA = { crt: pemFromBase64(machine.ca?.crt), key: pemFromBase64(machine.ca?.key) };
    if (!osCA.key) {
      ctx.log.error("no API certificate: machine.ca has no key, and requesting one from trustd is not supported yet", { machineType: cfg?.machineType });
      return;
    }
    const fallback = this.fallback();
    const current = ctx.get<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, NodeAddressIds.current)?.spec.addresses.map(stripPrefix);
    const status = ctx.list<HostnameStatusSpec>(NETWORK_NAMESPACE, HostnameStatusType)[0]?.spec;
    const configured = machine.network?.hostname;
    const hostname = configured || status?.hostname || fallback.hostname;
    const domain = status?.domainname ?? "";
    try {
      const server = await issueApiServerCert(osCA, {
        addresses: current?.length ? current : fallback.addresses,
        certSANs: machine.certSANs ?? [],
        hostname,
        fqdn: configured || !domain ? hostname : `${hostname}.${domain}`,
      });
      const acceptedCAs = [osCA.crt, ...(machine.acceptedCAs ?? []).map((c) => pemFromBase64(c.crt)).filter(Boolean)].map((crt) => ({ crt }));
      ctx.modify<APICertsSpec>(SECRETS_NAMESPACE, ApiCertificatesType, ApiCertificatesId, () => ({ server, acceptedCAs }));
    } catch (err) {
      ctx.log.error("issuing the API certificate failed", { error: describeError(err) });
      throw err;
    }
    ctx.requeueAfter(renewMs);
  }
}
