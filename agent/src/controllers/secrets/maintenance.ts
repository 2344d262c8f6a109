import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import {
  HostnameStatusType,
  NETWORK_NAMESPACE,
  NodeAddressIds,
  NodeAddressType,
} from "../../resources/catalog/network.js";
import {
  MachineStatusId,
  MachineStatusType,
  RUNTIME_NAMESPACE,
  type MachineStatusSpec,
} from "../../resources/catalog/runtime.js";
import {
  CertSANIds,
  CertSANType,
  MaintenanceRootSecretsId,
  MaintenanceRootSecretsType,
  MaintenanceServiceCertificatesId,
  MaintenanceServiceCertificatesType,
  SECRETS_NAMESPACE,
  type CertSANSpec,
  type MaintenanceRootSpec,
  type MaintenanceServiceCertsSpec,
} from "../../resources/catalog/secrets.js";
import { renewMs } from "./api.js";
import { nodeIdentity, type NodeIdentityFallback } from "./cert-sans.js";
import { generateMaintenanceRoot, issueServerCert, unique } from "./issue.js";

const maintenanceCommonName = "maintenance-service.talos.dev";

const machineStatusInput = {
  namespace: RUNTIME_NAMESPACE,
  type: MachineStatusType,
  id: MachineStatusId,
  kind: "weak" as const,
};

/**
 * The maintenance material exists only while the node waits for (or installs) its
 * first configuration: apid serves the maintenance API whenever a maintenance
 * certificate is published, so it must be gone once the node runs a configuration.
 */
function inMaintenance(ctx: ControllerContext): boolean {
  const stage = ctx.get<MachineStatusSpec>(RUNTIME_NAMESPACE, MachineStatusType, MachineStatusId)?.spec.stage;
  return stage === "maintenance" || stage === "installing";
}

/** MaintenanceRootSecrets: a throw-away Ed25519 CA, generated once per maintenance period. */
export class MaintenanceRootController implements Controller {
  readonly name = "secrets.MaintenanceRootController";
  readonly inputs = [machineStatusInput];
  readonly outputs = [{ type: MaintenanceRootSecretsType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    if (!inMaintenance(ctx)) {
      ctx.destroyOthers(SECRETS_NAMESPACE, MaintenanceRootSecretsType, new Set());
      return;
    }
    if (ctx.get(SECRETS_NAMESPACE, MaintenanceRootSecretsType, MaintenanceRootSecretsId)) return;
    const ca = await generateMaintenanceRoot();
    ctx.modify<MaintenanceRootSpec>(SECRETS_NAMESPACE, MaintenanceRootSecretsType, MaintenanceRootSecretsId, () => ({
      ca,
    }));
  }
}

/**
 * CertSANs `maintenance`: the node's addresses (and the address the listener is bound
 * to, when it is bound to one), loopback, the hostname; CN maintenance-service.talos.dev.
 */
export class MaintenanceCertSANsController implements Controller {
  readonly name = "secrets.MaintenanceCertSANsController";
  readonly inputs = [
    machineStatusInput,
    { namespace: NETWORK_NAMESPACE, type: NodeAddressType, id: NodeAddressIds.current, kind: "weak" as const },
    { namespace: NETWORK_NAMESPACE, type: HostnameStatusType, kind: "weak" as const },
  ];
  readonly outputs = [{ type: CertSANType, kind: "shared" as const }];

  constructor(
    private readonly fallback: NodeIdentityFallback,
    private readonly listenAddresses: readonly string[],
  ) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    if (!inMaintenance(ctx)) {
      ctx.destroyOthers(SECRETS_NAMESPACE, CertSANType, new Set());
      return;
    }
    const node = nodeIdentity(ctx, this.fallback);
    const spec: CertSANSpec = {
      ips: unique([...node.addresses, ...this.listenAddresses, "127.0.0.1", "::1"]).sort(),
      dnsNames: unique([node.hostname, node.fqdn]).sort(),
      fqdn: maintenanceCommonName,
    };
    ctx.modify<CertSANSpec>(SECRETS_NAMESPACE, CertSANType, CertSANIds.maintenance, () => spec);
  }
}

/** MaintenanceServiceCertificates: the maintenance server certificate for those SANs (24 h, renewed at half-life). */
export class MaintenanceController implements Controller {
  readonly name = "secrets.MaintenanceController";
  readonly inputs = [
    {
      namespace: SECRETS_NAMESPACE,
      type: MaintenanceRootSecretsType,
      id: MaintenanceRootSecretsId,
      kind: "weak" as const,
    },
    { namespace: SECRETS_NAMESPACE, type: CertSANType, id: CertSANIds.maintenance, kind: "weak" as const },
  ];
  readonly outputs = [{ type: MaintenanceServiceCertificatesType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const root = ctx.get<MaintenanceRootSpec>(
      SECRETS_NAMESPACE,
      MaintenanceRootSecretsType,
      MaintenanceRootSecretsId,
    )?.spec;
    const sans = ctx.get<CertSANSpec>(SECRETS_NAMESPACE, CertSANType, CertSANIds.maintenance)?.spec;
    if (!root || !sans) {
      ctx.destroyOthers(SECRETS_NAMESPACE, MaintenanceServiceCertificatesType, new Set());
      return;
    }
    const server = await issueServerCert(root.ca, sans);
    // The CA's key stays in MaintenanceRootSecrets; only its certificate is handed on.
    ctx.modify<MaintenanceServiceCertsSpec>(
      SECRETS_NAMESPACE,
      MaintenanceServiceCertificatesType,
      MaintenanceServiceCertificatesId,
      () => ({
        ca: { crt: root.ca.crt, key: "" },
        server,
      }),
    );
    ctx.requeueAfter(renewMs);
  }
}
