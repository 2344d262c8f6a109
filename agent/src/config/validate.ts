// validateConfig: the checks a Talos v1.7 node runs on a machine configuration
// (message texts as users see them from Talos), plus value checks on every typed
// field. Each error reads "<field path>: <text>".

import { ConfigValidationError } from "../errors.js";
import type { ConfigBundle, ConfigDocument } from "./bundle.js";
import { checkValue, durationMs, isUrl } from "./checks.js";
import { nodeLabelProblems, nodeTaintProblems } from "./node-labels.js";
import { childPath } from "./decode.js";
import { schemaOf } from "./schemas.js";
import type { Schema } from "./types/schema.js";
import { type BondOptionName, bondNames } from "../resources/catalog/network.js";
import type { Bond, Device, InstallDiskSelector, V1Alpha1Config, Vlan } from "./types/v1alpha1.js";

export type RuntimeMode = "metal" | "cloud" | "container";

export interface ValidateOptions {
  mode: RuntimeMode;
  /** The node already runs from an installed disk (install instructions not needed). */
  installed?: boolean;
  /** Why this node cannot install to what `.machine.install` names (metal mode), or undefined; unset: not checked. */
  installDisk?: (install: { disk?: string; diskSelector?: InstallDiskSelector }) => string | undefined;
}

export interface ValidationResult {
  errors: string[];
  warnings: string[];
}

type Report = (path: string, text: string) => void;

/** Runs every check; never throws for invalid configs. */
export function validateConfig(bundle: ConfigBundle, opts: ValidateOptions): ValidationResult {
  const errors: string[] = [];
  const warnings: string[] = [...bundle.warnings];
  for (const doc of bundle.documents) {
    const prefix = doc.kind === "v1alpha1" ? "" : `${doc.kind}${doc.name ? ` ${JSON.stringify(doc.name)}` : ""}: `;
    const err: Report = (path, text) => errors.push(`${prefix}${path}: ${text}`);
    const warn: Report = (path, text) => warnings.push(`${prefix}${path}: ${text}`);
    checkValues(doc.value, schemaOf(doc.kind), "", err);
    if (doc.kind === "v1alpha1") validateV1Alpha1(doc.value as V1Alpha1Config, bundle, opts, err, warn);
    else validateOther(doc, err);
  }
  return { errors, warnings };
}

/** Value checks (URLs, CIDRs, IPs, durations, enums) on typed fields. */
function checkValues(value: unknown, schema: Schema, path: string, err: Report): void {
  if (value === undefined || value === null) return;
  switch (schema.t) {
    case "str":
    case "int":
      if (schema.check && !(typeof value === "string" && value === "")) {
        const problem = checkValue(value, schema.check);
        if (problem) err(path, enumText(path) ?? problem);
      }
      return;
    case "list":
      if (Array.isArray(value)) value.forEach((v, i) => checkValues(v, schema.of, `${path}[${i}]`, err));
      return;
    case "map":
      if (typeof value === "object")
        for (const [k, v] of Object.entries(value)) checkValues(v, schema.of, childPath(path, k), err);
      return;
    case "obj":
      if (typeof value === "object" && !Array.isArray(value)) {
        for (const [k, f] of Object.entries(schema.fields)) {
          // machine.type has its own Talos message below; endpoint too.
          if (path === ".machine" && k === "type") continue;
          checkValues((value as Record<string, unknown>)[k], f.s, childPath(path, k), err);
        }
      }
      return;
    default:
      return;
  }
}

/** Talos words some enum failures itself. */
function enumText(path: string): string | undefined {
  if (path === ".cluster.network.cni.name") return `cni name should be one of ["flannel", "custom", "none"]`;
  return undefined;
}

const nonEmpty = (s: unknown): boolean => typeof s === "string" && s !== "";

function validateV1Alpha1(
  cfg: V1Alpha1Config,
  bundle: ConfigBundle,
  opts: ValidateOptions,
  err: Report,
  warn: Report,
): void {
  const machine = cfg.machine;
  const cluster = cfg.cluster;
  const worker = bundle.machineType === "worker";

  if (cfg.persist === false) err(".persist", ".persist should be enabled");
  if (!machine) err(".machine", "machine instructions are required");
  if (!cluster) err(".cluster", "cluster instructions are required");

  if (machine) {
    const type = machine.type ?? "";
    if (!["init", "controlplane", "worker", "join", ""].includes(type))
      err(".machine.type", `unknown machine type ${JSON.stringify(type)}`);
    validateInstall(cfg, opts, err, warn);
    validateMachineCA(cfg, worker, err);
    for (const p of nodeLabelProblems(machine.nodeLabels ?? {}))
      err(".machine.nodeLabels", `invalid machine node labels: ${p}`);
    for (const p of nodeTaintProblems(machine.nodeTaints ?? {}))
      err(".machine.nodeTaints", `invalid machine node taints: ${p}`);
    (machine.network?.interfaces ?? []).forEach((dev, i) =>
      validateDevice(dev, `.machine.network.interfaces[${i}]`, worker, err, warn),
    );
    if (machine.network?.kubespan?.enabled) {
      if (!cluster?.discovery?.enabled)
        err(
          ".cluster.discovery.enabled",
          ".cluster.discovery should be enabled when .machine.network.kubespan is enabled",
        );
      if (!nonEmpty(cluster?.id))
        err(".cluster.id", ".cluster.id should be set when .machine.network.kubespan is enabled");
      if (!nonEmpty(cluster?.secret))
        err(".cluster.secret", ".cluster.secret should be set when .machine.network.kubespan is enabled");
    }
  }

  if (cluster) {
    const endpoint = cluster.controlPlane?.endpoint;
    if (!nonEmpty(endpoint)) err(".cluster.controlPlane.endpoint", "cluster controlplane endpoint is required");
    else {
      const problem = endpointProblem(endpoint!);
      if (problem) err(".cluster.controlPlane.endpoint", `invalid controlplane endpoint: ${problem}`);
    }
    if (worker && nonEmpty(cluster.ca?.key)) {
      err(".cluster.ca.key", "issuing Kubernetes API CA key is not allowed on non-controlplane nodes (.cluster.ca)");
    }
    if (worker && cluster.etcd) err(".cluster.etcd", "etcd config is only allowed on control plane machines");
    // CNI settings matter only where the CNI is deployed (control plane).
    const cni = cluster.network?.cni;
    if (!worker && cni) {
      if (cni.name === "custom" && !(cni.urls && cni.urls.length > 0)) {
        warn(".cluster.network.cni.urls", `"urls" field should not be empty for "custom" CNI`);
      }
      if ((cni.name === "flannel" || cni.name === "none") && cni.urls && cni.urls.length > 0) {
        err(".cluster.network.cni.urls", `"urls" field should be empty for ${JSON.stringify(cni.name)} CNI`);
      }
    }
    const dnsDomain = cluster.network?.dnsDomain;
    if (nonEmpty(dnsDomain) && !isDnsName(dnsDomain!)) {
      err(".cluster.network.dnsDomain", `${JSON.stringify(dnsDomain)} is not a valid DNS name`);
    }
    const seenManifests = new Set<string>();
    (cluster.inlineManifests ?? []).forEach((m, i) => {
      const name = m.name ?? "";
      if (name.trim() === "") err(`.cluster.inlineManifests[${i}].name`, "inline manifest name can't be empty");
      else if (seenManifests.has(name))
        err(`.cluster.inlineManifests[${i}].name`, `inline manifest name ${JSON.stringify(name)} is duplicate`);
      seenManifests.add(name);
    });
    const discovery = cluster.discovery;
    if (discovery?.enabled && !discovery.registries?.service?.disabled) {
      if (!nonEmpty(cluster.id)) err(".cluster.id", "cluster discovery service requires .cluster.id");
      if (!nonEmpty(cluster.secret)) err(".cluster.secret", "cluster discovery service requires .cluster.secret");
    }
    const ecp = cluster.externalCloudProvider;
    if (ecp && !ecp.enabled && (ecp.manifests ?? []).length > 0) {
      err(".cluster.externalCloudProvider", "external cloud provider is disabled, but manifests are provided");
    }
    if (cluster.allowSchedulingOnMasters !== undefined) {
      warn(
        ".cluster.allowSchedulingOnMasters",
        ".cluster.allowSchedulingOnMasters is deprecated, use .cluster.allowSchedulingOnControlPlanes",
      );
    }
  }
}

function validateMachineCA(cfg: V1Alpha1Config, worker: boolean, err: Report): void {
  const ca = cfg.machine?.ca;
  const accepted = cfg.machine?.acceptedCAs ?? [];
  const hasCA = !!ca && (nonEmpty(ca.crt) || nonEmpty(ca.key));
  if (!hasCA && accepted.length === 0) {
    err(".machine.ca", "issuing CA or some accepted CAs are required (.machine.ca, machine.acceptedCAs)");
    return;
  }
  if (!worker) {
    if (!hasCA) err(".machine.ca", "issuing CA is required (.machine.ca)");
    else if (!nonEmpty(ca!.key))
      err(".machine.ca.key", "issuing CA key is required for controlplane nodes (.machine.ca.key)");
    return;
  }
  if (hasCA && nonEmpty(ca!.key)) {
    err(".machine.ca.key", "issuing Talos API CA key is not allowed on non-controlplane nodes (.machine.ca)");
  }
  if (hasCA && !nonEmpty(ca!.crt) && accepted.length === 0) {
    err(
      ".machine.ca.crt",
      "trusted CA certificates are required on non-controlplane nodes (.machine.ca.crt, .machine.acceptedCAs)",
    );
  }
}

function isDnsName(name: string): boolean {
  if (name.length - (name.match(/\./g)?.length ?? 0) > 255) return false;
  return /^[a-zA-Z0-9_][a-zA-Z0-9_-]{0,62}(\.[a-zA-Z0-9_][a-zA-Z0-9_-]{0,62})*[._]?$/.test(name);
}

function endpointProblem(endpoint: string): string | undefined {
  if (!isUrl(endpoint)) return `parse ${JSON.stringify(endpoint)}: not an absolute URL with scheme and host`;
  const u = new URL(endpoint);
  if (u.protocol !== "https:" && u.protocol !== "http:")
    return `unsupported scheme ${JSON.stringify(u.protocol.slice(0, -1))}`;
  return undefined;
}

function validateInstall(cfg: V1Alpha1Config, opts: ValidateOptions, err: Report, warn: Report): void {
  const install = cfg.machine?.install;
  if (install?.extensions && install.extensions.length > 0) {
    warn(".machine.install.extensions", ".machine.install.extensions is deprecated, please see the documentation");
  }
  if (opts.mode !== "metal" || opts.installed) return;
  if (!install) {
    err(".machine.install", `install instructions are required in "metal" mode`);
    return;
  }
  if (!nonEmpty(install.disk) && !install.diskSelector) {
    err(".machine.install.disk", `an install disk is required in "metal" mode`);
    return;
  }
  // As Talos's Validate outside the installer: the path must exist and a selector must match, now.
  const problem = opts.installDisk?.(install);
  if (problem !== undefined)
    err(install.diskSelector ? ".machine.install.diskSelector" : ".machine.install.disk", problem);
}

function validateDevice(dev: Device, path: string, worker: boolean, err: Report, warn: Report): void {
  const name = dev.interface ?? "";
  const label = JSON.stringify(name);
  if (!nonEmpty(dev.interface) && !dev.deviceSelector) {
    err(
      path,
      "[networking.os.device.interface], [networking.os.device.deviceSelector]: required either config section to be set",
    );
  }
  if (nonEmpty(dev.interface) && dev.deviceSelector) {
    err(
      path,
      "[networking.os.device.interface], [networking.os.device.deviceSelector]: config sections are mutually exclusive",
    );
  }
  if (dev.deviceSelector && Object.keys(dev.deviceSelector).length === 0) {
    err(
      `${path}.deviceSelector`,
      "[networking.os.device.deviceSelector]: config section should contain at least one field",
    );
  }
  if (dev.bond && dev.bridge) {
    err(path, `interface has both bridge and bond sections set ${label}: config sections are mutually exclusive`);
  }
  if (nonEmpty(dev.cidr) && dev.addresses && dev.addresses.length > 0) {
    err(path, `[networking.os.device] ${label}: interface can't have both .cidr and .addresses set`);
  }
  if (nonEmpty(dev.cidr)) {
    warn(
      `${path}.cidr`,
      `${label}: machine.network.interface.cidr is deprecated, please use machine.network.interface.addresses`,
    );
  }
  if (dev.vip && worker) err(`${path}.vip`, "virtual (shared) IP is not allowed on non-controlplane nodes");
  if (dev.bond) for (const problem of bondProblems(dev.bond)) err(`${path}.bond`, problem);
  (dev.vlans ?? []).forEach((vlan: Vlan, j) => {
    const vpath = `${path}.vlans[${j}]`;
    if (vlan.vip && worker) err(`${vpath}.vip`, "virtual (shared) IP is not allowed on non-controlplane nodes");
    if (nonEmpty(vlan.cidr) && vlan.addresses && vlan.addresses.length > 0) {
      err(
        vpath,
        `[networking.os.device.vlan] ${name}.${vlan.vlanId ?? 0}: vlan can't have both .cidr and .addresses set`,
      );
    }
    if (vlan.vlanId !== undefined && (vlan.vlanId < 1 || vlan.vlanId > 4094)) {
      err(`${vpath}.vlanId`, `[networking.os.device.vlan] ${label}: invalid vlanId ${vlan.vlanId}`);
    }
  });
}

/** Talos's checkBond: option names nethelpers knows (empty means the default) and the combinations the kernel accepts. */
function bondProblems(b: Bond): string[] {
  const out: string[] = [];
  const known = (option: BondOptionName, value: string | undefined, text: string) => {
    if (value && !(bondNames[option] as readonly string[]).includes(value)) out.push(`${text} ${value}`);
  };
  known("mode", b.mode, "invalid bond type");
  known("xmitHashPolicy", b.xmitHashPolicy, "invalid xmit hash policy");
  known("lacpRate", b.lacpRate, "invalid lacp rate");
  known("arpValidate", b.arpValidate, "invalid arp_validate mode");
  known("arpAllTargets", b.arpAllTargets, "invalid arp_all_targets mode");
  known("primaryReselect", b.primaryReselect, "invalid primary_reselect mode");
  known("failOverMac", b.failOverMac, "invalid fail_over_mac value");
  known("adSelect", b.adSelect, "invalid ad_select mode");
  const mode = b.mode || "balance-rr";
  const miimon = b.miimon ?? 0;
  if (miimon === 0) {
    if (b.updelay) out.push("bond.upDelay can't be set if miiMon is zero");
    if (b.downdelay) out.push("bond.downDelay can't be set if miiMon is zero");
  } else {
    if ((b.updelay ?? 0) % miimon !== 0) out.push("bond.upDelay should be a multiple of miiMon");
    if ((b.downdelay ?? 0) % miimon !== 0) out.push("bond.downDelay should be a multiple of miiMon");
  }
  if ((b.arpIPTarget ?? []).length > 0) out.push("bond.arpIPTarget is not supported");
  if (b.lacpRate && mode !== "802.3ad") out.push("bond.lacpRate is only available in 802.3ad mode");
  if (b.adActorSystem) out.push("bond.adActorSystem is not supported");
  const adTlbAlb = ["802.3ad", "balance-alb", "balance-tlb"].includes(mode);
  if (adTlbAlb && b.arpValidate) out.push(`bond.arpValidate is not available in ${mode} mode`);
  if (!["active-backup", "balance-alb", "balance-tlb"].includes(mode) && b.primary)
    out.push(`bond.primary is not available in ${mode} mode`);
  if (adTlbAlb && (b.arpInterval ?? 0) > 0) out.push(`bond.arpInterval is not available in ${mode} mode`);
  if (mode !== "balance-rr" && (b.packetsPerSlave ?? 0) > 1)
    out.push(`bond.packetsPerSlave is not available in ${mode} mode`);
  if (!["balance-alb", "balance-tlb"].includes(mode) && (b.tlbDynamicLb ?? 0) > 0)
    out.push(`bond.tlbDynamicTLB is not available in ${mode} mode`);
  if (mode !== "802.3ad" && (b.adActorSysPrio ?? 0) > 0)
    out.push("bond.adActorSysPrio is only available in 802.3ad mode");
  if (mode !== "802.3ad" && (b.adUserPortKey ?? 0) > 0)
    out.push("bond.adUserPortKey is only available in 802.3ad mode");
  return out;
}

function validateOther(doc: ConfigDocument, err: Report): void {
  const v = doc.value as Record<string, unknown>;
  switch (doc.kind) {
    case "ExtensionServiceConfig":
    case "NetworkRuleConfig":
    case "KmsgLogConfig":
      if (!nonEmpty(v.name)) err(".name", "name is required");
      break;
  }
  switch (doc.kind) {
    case "WatchdogTimerConfig": {
      if (!nonEmpty(v.device)) err(".device", "watchdog device is required");
      const ms = typeof v.timeout === "string" ? durationMs(v.timeout) : undefined;
      if (ms !== undefined && ms < 10_000) err(".timeout", "watchdog timeout should be at least 10s");
      break;
    }
    case "SideroLinkConfig":
      if (!nonEmpty(v.apiUrl)) err(".apiUrl", "apiUrl is required");
      break;
    case "KmsgLogConfig":
      if (!nonEmpty(v.url)) err(".url", "url is required");
      break;
    case "EventSinkConfig":
      if (!nonEmpty(v.endpoint)) err(".endpoint", "endpoint is required");
      break;
    case "NetworkRuleConfig": {
      const sel = v.portSelector as { ports?: unknown[] } | undefined;
      (sel?.ports ?? []).forEach((p, i) => {
        const problem = portRangeProblem(p);
        if (problem) err(`.portSelector.ports[${i}]`, problem);
      });
      break;
    }
  }
}

function portRangeProblem(p: unknown): string | undefined {
  const inRange = (n: number) => Number.isInteger(n) && n >= 1 && n <= 65535;
  if (typeof p === "number") return inRange(p) ? undefined : `invalid port ${p}`;
  if (typeof p === "string") {
    const m = /^(\d+)(?:-(\d+))?$/.exec(p);
    if (m && inRange(Number(m[1])) && (!m[2] || (inRange(Number(m[2])) && Number(m[2]) >= Number(m[1]))))
      return undefined;
  }
  return `invalid port range ${JSON.stringify(p)}`;
}

/**
 * validateConfig, throwing ConfigValidationError (its `problems` are the errors) when
 * anything is wrong; returns the warnings otherwise.
 */
export function assertValidConfig(bundle: ConfigBundle, opts: ValidateOptions): string[] {
  const { errors, warnings } = validateConfig(bundle, opts);
  if (errors.length > 0) throw new ConfigValidationError(errors, { mode: opts.mode });
  return warnings;
}
