import { parseAllDocuments } from "yaml";
import { pemFromBase64 } from "../pki/index.js";
import type { PemCertAndKey as PemPair } from "../resources/codec.js";
import type { MachineTypeName } from "../resources/catalog/config.js";

/** The few settings machined itself acts on, read from an already validated config. */
export interface ConfigFacts {
  machineType: MachineTypeName;
  /** machine.ca (PEM text; key may be empty on workers). */
  osCA: PemPair;
  /** machine.acceptedCAs certificates (PEM text). */
  acceptedCAs: string[];
  certSANs: string[];
  /** machine.network.hostname, when set. */
  hostname?: string;
  rbac: boolean;
  apidCheckExtKeyUsage: boolean;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : {});

/** Reads the v1alpha1 document's machine settings machined needs (certificates, features, type). */
export function configFacts(text: string): ConfigFacts {
  const v1 = parseAllDocuments(text)
    .map((d) => obj(d.toJS()))
    .find((d) => d["version"] === "v1alpha1" && d["kind"] === undefined);
  const machine = obj(v1?.["machine"]);
  const features = obj(machine["features"]);
  const ca = obj(machine["ca"]);
  const type = String(machine["type"] ?? "unknown");
  const hostname = obj(machine["network"])["hostname"];
  return {
    machineType: (["init", "controlplane", "worker"].includes(type) ? type : "unknown") as MachineTypeName,
    osCA: { crt: pemFromBase64(ca["crt"]), key: pemFromBase64(ca["key"]) },
    acceptedCAs: (Array.isArray(machine["acceptedCAs"]) ? machine["acceptedCAs"] : []).map((c) => pemFromBase64(obj(c)["crt"])).filter(Boolean),
    certSANs: (Array.isArray(machine["certSANs"]) ? machine["certSANs"] : []).map(String),
    ...(typeof hostname === "string" && hostname ? { hostname } : {}),
    // Both default to on when absent (generated configs set them explicitly).
    rbac: features["rbac"] !== false,
    apidCheckExtKeyUsage: features["apidCheckExtKeyUsage"] === true,
  };
}
