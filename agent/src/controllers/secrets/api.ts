import type { ConfigBundle } from "../../config/bundle.js";
import { describeError } from "../../errors.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { MemberType, type MemberSpec } from "../../resources/catalog/cluster.js";
import {
  CONFIG_NAMESPACE,
  MachineConfigIds,
  MachineConfigType,
  MachineTypeId,
  MachineTypeType,
  type MachineTypeName,
} from "../../resources/catalog/config.js";
import {
  ApiCertificatesId,
  ApiCertificatesType,
  CertSANIds,
  CertSANType,
  OSRootSecretsId,
  OSRootSecretsType,
  SECRETS_NAMESPACE,
  type APICertsSpec,
  type CertSANSpec,
  type OSRootSpec,
} from "../../resources/catalog/secrets.js";
import { createServerCSR, issueImpersonatorClientCert, issueServerCert } from "./issue.js";
import { requestCertificate, type RequestDeps } from "./trustd-request.js";

// Talos renews the 24 h API certificates at half-life.
export const renewMs = 12 * 3600_000;
export const trustdPort = 50001;
const clusterNamespace = "cluster";
// A waiting worker repeats the same complaint at most this often.
const waitingLogEveryMs = 60_000;

export const isControlPlane = (t: MachineTypeName | undefined) => t === "controlplane" || t === "init";

/** host:port with IPv6 hosts bracketed. */
const hostPort = (host: string, port: number) => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`);

/**
 * Where a worker finds trustd: the host of cluster.controlPlane.endpoint and the
 * addresses of the control-plane members when discovery knows them, port 50001.
 */
export function trustdEndpoints(cfg: ConfigBundle | undefined, members: readonly MemberSpec[]): string[] {
  const out: string[] = [];
  const endpoint = cfg?.v1alpha1WithDefaults()?.cluster?.controlPlane?.endpoint;
  if (endpoint) {
    try {
      out.push(hostPort(new URL(endpoint).hostname.replace(/^\[|\]$/g, ""), trustdPort));
    } catch {
      // validation refuses such a config; members may still name the control plane
    }
  }
  for (const m of members)
    if (isControlPlane(m.machineType))
      for (const a of m.addresses) out.push(hostPort(a.replace(/\/\d+$/, ""), trustdPort));
  return [...new Set(out)];
}

/**
 * ApiCertificates `api` (reference §3): on the control plane the server certificate
 * and the os:impersonator client certificate are signed here with the OS CA key; a
 * worker sends an Ed25519 CSR to trustd on the control plane and waits, saying so,
 * until one answers. Issued again when the SANs (addresses, hostname, certSANs) or
 * CAs change and at half-life.
 */
export class APIController implements Controller {
  readonly name = "secrets.APIController";
  readonly inputs = [
    { namespace: CONFIG_NAMESPACE, type: MachineTypeType, id: MachineTypeId, kind: "weak" as const },
    { namespace: SECRETS_NAMESPACE, type: OSRootSecretsType, id: OSRootSecretsId, kind: "weak" as const },
    { namespace: SECRETS_NAMESPACE, type: CertSANType, id: CertSANIds.api, kind: "weak" as const },
    // Workers: the control-plane endpoint and members.
    { namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active, kind: "weak" as const },
    { namespace: clusterNamespace, type: MemberType, kind: "weak" as const },
  ];
  readonly outputs = [{ type: ApiCertificatesType }];

  /** What the current certificates were issued for, and when. */
  private issued: { key: string; at: number } | undefined;
  private lastWaitingLog: { text: string; at: number } | undefined;

  constructor(
    private readonly trustd: Omit<RequestDeps, "onFailure">,
    private readonly now: () => number = Date.now,
  ) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const type = ctx.get<MachineTypeName>(CONFIG_NAMESPACE, MachineTypeType, MachineTypeId)?.spec;
    const root = ctx.get<OSRootSpec>(SECRETS_NAMESPACE, OSRootSecretsType, OSRootSecretsId)?.spec;
    const sans = ctx.get<CertSANSpec>(SECRETS_NAMESPACE, CertSANType, CertSANIds.api)?.spec;
    if (!type || type === "unknown" || !root) {
      this.issued = undefined;
      ctx.destroyOthers(SECRETS_NAMESPACE, ApiCertificatesType, new Set());
      return;
    }
    if (!sans) return;
    const key = JSON.stringify({ type, sans, cas: root.acceptedCAs, issuing: root.issuingCA?.crt ?? "" });
    const have = ctx.get(SECRETS_NAMESPACE, ApiCertificatesType, ApiCertificatesId);
    if (have && this.issued?.key === key && this.now() < this.issued.at + renewMs) {
      ctx.requeueAfter(this.issued.at + renewMs - this.now());
      return;
    }
    const spec = isControlPlane(type)
      ? await this.issueLocally(ctx, root, sans)
      : await this.requestFromTrustd(ctx, root, sans);
    if (!spec) return;
    ctx.modify<APICertsSpec>(SECRETS_NAMESPACE, ApiCertificatesType, ApiCertificatesId, () => spec);
    this.issued = { key, at: this.now() };
    ctx.requeueAfter(renewMs);
  }

  private async issueLocally(
    ctx: ControllerContext,
    root: OSRootSpec,
    sans: CertSANSpec,
  ): Promise<APICertsSpec | undefined> {
    if (!root.issuingCA) {
      ctx.log.error("no API certificate: this control-plane node's machine.ca has no key");
      return undefined;
    }
    const [server, client] = await Promise.all([
      issueServerCert(root.issuingCA, sans),
      issueImpersonatorClientCert(root.issuingCA, sans.fqdn),
    ]);
    return { server, client, acceptedCAs: root.acceptedCAs };
  }

  private async requestFromTrustd(ctx: ControllerContext, root: OSRootSpec, sans: CertSANSpec): Promise<APICertsSpec> {
    const cfg = ctx.get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)?.spec;
    const endpoints = trustdEndpoints(
      cfg,
      ctx.list<MemberSpec>(clusterNamespace, MemberType).map((m) => m.spec),
    );
    const { csrPem, keyPem } = await createServerCSR(sans);
    const caPem = root.acceptedCAs.map((c) => c.crt).join("\n");
    const onFailure = (endpoint: string, err: unknown) => this.sayWaiting(ctx, endpoints, endpoint, err);
    const signed = await requestCertificate(endpoints, { token: root.token, caPem, csrPem }, ctx.signal, {
      ...this.trustd,
      onFailure,
    }).catch((err: unknown) => {
      if (endpoints.length === 0) this.sayWaiting(ctx, endpoints, "", err);
      throw err;
    });
    // A worker only: @peculiar/x509 loads here, not on every machined start.
    const { parseCertificatePem } = await import("../../pki/index.js");
    const cert = parseCertificatePem(signed.crt);
    ctx.log.info("API certificate received from trustd", {
      endpoint: signed.endpoint,
      notAfter: cert.notAfter.toISOString(),
    });
    this.lastWaitingLog = undefined;
    return { server: { crt: signed.crt, key: keyPem }, acceptedCAs: [{ crt: signed.ca }] };
  }

  /** The console line of a worker without its certificate, not repeated more than once a minute. */
  private sayWaiting(ctx: ControllerContext, endpoints: string[], endpoint: string, err: unknown): void {
    const text = `waiting for a certificate from trustd at ${endpoints.join(", ") || "(no control-plane endpoint known)"}: ${describeError(err)}`;
    const last = this.lastWaitingLog;
    if (last && last.text === text && this.now() - last.at < waitingLogEveryMs) return;
    this.lastWaitingLog = { text, at: this.now() };
    ctx.log.warn(text, endpoint ? { endpoint } : {});
  }
}
