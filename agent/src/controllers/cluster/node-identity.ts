// cluster.NodeIdentityController: the node's identity, made once and kept in STATE as
// node-identity.yaml (32 random bytes in base62, as Talos makes it), published as Identity
// `local`; /etc/machine-id is derived from it (the hex of its first 16 bytes), so the kubelet
// and the pods that read it see one id for as long as STATE lives.
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { parse, stringify } from "yaml";
import { InvalidInputError } from "../../errors.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { IdentityType, type IdentitySpec } from "../../resources/catalog/cluster.js";
import { MountStatusType, RUNTIME_NAMESPACE } from "../../resources/catalog/runtime.js";
import { writeFileInPlace } from "../../sys/atomic-file.js";
import { base62Decode, base62Encode } from "./base62.js";

export const CLUSTER_NAMESPACE = "cluster";
export const LocalIdentityId = "local";
export const nodeIdentityFile = "node-identity.yaml";

export interface NodeIdentityOptions {
  /** STATE's mount point (/system/state). */
  stateDir: string;
  /** machined runs in a container, where STATE is always there. */
  container: boolean;
  /** Writes /etc/machine-id's content. */
  writeMachineId(text: string): Promise<void>;
}

/** /etc/machine-id of an identity: the hex of the first 16 bytes its id encodes. */
export function machineId(nodeId: string): string {
  const raw = base62Decode(nodeId);
  if (raw.length < 16)
    throw new InvalidInputError(`node identity ${JSON.stringify(nodeId)} is shorter than 16 bytes`, { nodeId });
  return raw.subarray(0, 16).toString("hex");
}

async function loadOrCreate(file: string): Promise<IdentitySpec> {
  try {
    // node-identity.yaml as Talos writes it: one key, nodeId.
    const spec = parse(await fs.readFile(file, "utf8")) as Partial<IdentitySpec> | null;
    if (typeof spec?.nodeId !== "string") throw new InvalidInputError(`${file} has no nodeId`, { file });
    return { nodeId: spec.nodeId };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  const spec: IdentitySpec = { nodeId: base62Encode(randomBytes(32)) };
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, stringify(spec), { mode: 0o600, flag: "wx" });
  return spec;
}

/** Writes /etc/machine-id (0444, in place: init binds it over /etc's) unless it already says `text`. */
export async function writeMachineId(file: string, text: string): Promise<void> {
  const current = await fs.readFile(file, "utf8").catch(() => undefined);
  if (current !== text) await writeFileInPlace(file, text, 0o444);
}

export class NodeIdentityController implements Controller {
  readonly name = "cluster.NodeIdentityController";
  readonly inputs = [{ namespace: RUNTIME_NAMESPACE, type: MountStatusType, id: "STATE", kind: "weak" as const }];
  readonly outputs = [{ type: IdentityType }];
  private established = false;

  constructor(private readonly opts: NodeIdentityOptions) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    if (!this.opts.container && !ctx.get(RUNTIME_NAMESPACE, MountStatusType, "STATE")) return;
    const spec = await loadOrCreate(path.join(this.opts.stateDir, nodeIdentityFile));
    ctx.modify<IdentitySpec>(CLUSTER_NAMESPACE, IdentityType, LocalIdentityId, () => spec);
    await this.opts.writeMachineId(`${machineId(spec.nodeId)}`);
    if (!this.established) ctx.log.info("node identity established", { node_id: spec.nodeId });
    this.established = true;
  }
}
