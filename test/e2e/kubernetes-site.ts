// An air-gapped site for one Basalt control plane in QEMU: the project's Kubernetes images (and the
// tests' echo image) pushed to Debian's docker-registry on the host, and a controlplane config whose
// registry mirrors send registry.k8s.io, gcr.io, ghcr.io and registry.basalt.test there. The
// Kubernetes journey and bench/kubernetes.ts both start from it.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { parseDocument } from "yaml";
import type { NodeClient } from "../../agent/src/client/client.js";
import { startRegistry, type TestRegistry } from "../integration/helpers/registry.js";
import { tarEntries } from "../integration/helpers/tar-entries.js";
import { repoRoot } from "./qemu.js";

/** The hostname the config gives the node, and so its Kubernetes node name. */
export const nodeHostname = "k8s-node";

/** A plain-HTTP registry in `dir` holding every Kubernetes image and the echo test image. */
export async function airGappedRegistry(dir: string): Promise<TestRegistry> {
  const registry = await startRegistry(dir, { plain: true });
  for (const only of [[], ["--only", "echo"]]) {
    execFileSync("bash", ["scripts/k8s-images.sh", "--push", registry.host, "--insecure", ...only], {
      cwd: repoRoot,
      stdio: ["ignore", "ignore", "inherit"],
    });
  }
  return registry;
}

/**
 * The controlplane config for the site: the registry mirrors (the guest reaches the host's registry at
 * 10.0.2.2), a hostname, no time sync (the guest reaches no NTP server), workloads allowed on the
 * control plane (it is the only node), and no leader election for the controller manager and scheduler:
 * under TCG they cannot renew their leases in time and restart over and over, and one control plane
 * needs none. The kubelet's graceful node shutdown gets twice Talos's time (60 s, 20 s of it for critical
 * pods): under TCG it takes about 10 s to stop one pod, and pods it has not stopped when its time is up
 * are stopped without it.
 */
export function siteConfig(controlplane: string, registry: TestRegistry): string {
  const endpoint = `http://10.0.2.2:${registry.host.split(":")[1]}`;
  const doc = parseDocument(controlplane);
  for (const upstream of ["registry.k8s.io", "gcr.io", "ghcr.io", "registry.basalt.test"])
    doc.setIn(["machine", "registries", "mirrors", upstream], { endpoints: [endpoint] });
  doc.setIn(["machine", "network", "hostname"], nodeHostname);
  doc.setIn(["machine", "time", "disabled"], true);
  doc.setIn(["cluster", "allowSchedulingOnControlPlanes"], true);
  doc.setIn(["machine", "kubelet", "extraConfig"], {
    shutdownGracePeriod: "60s",
    shutdownGracePeriodCriticalPods: "20s",
  });
  for (const component of ["controllerManager", "scheduler"])
    doc.setIn(["cluster", component, "extraArgs"], { "leader-elect": "false" });
  return doc.toString();
}

/** Where the journey and the bench keep their registry, kubeconfig and talosconfig. */
export function siteDir(name: string): string {
  return path.join(repoRoot, "_out", "e2e", name);
}

/** The admin kubeconfig's YAML, out of the tar.gz the Kubeconfig RPC sends (talosctl kubeconfig unpacks it the same way). */
export async function adminKubeconfig(c: NodeClient): Promise<Buffer> {
  const entries = tarEntries(gunzipSync(await c.kubeconfig()));
  const file = entries.find((e) => e.name === "kubeconfig");
  if (!file) throw new Error(`no kubeconfig in the Kubeconfig reply (${entries.map((e) => e.name).join(", ")})`);
  return file.contents;
}

/**
 * Runs the server-side HealthCheck naming this control plane (as `talosctl health --control-plane-nodes`
 * does: otherwise the node lists the nodes from the API server once, and one answer slower than the
 * client's 15 s fails the whole call). Resolves with every progress line; a failed run rejects with them,
 * so the check that did not pass is named.
 */
export function controlPlaneHealth(c: NodeClient, waitSeconds: number): Promise<string[]> {
  const request = { wait_timeout: { seconds: waitSeconds }, cluster_info: { control_plane_nodes: ["10.0.2.15"] } };
  return new Promise((resolve, reject) => {
    const lines: string[] = [];
    const stream = c.cluster.HealthCheck(request, c.metadata(), { deadline: Date.now() + (waitSeconds + 60) * 1000 });
    stream.on("data", (m: { message: string }) => lines.push(m.message));
    stream.on("error", (err: Error) => reject(new Error(`HealthCheck failed: ${err.message}\n${lines.join("\n")}`)));
    stream.on("end", () => resolve(lines));
  });
}
