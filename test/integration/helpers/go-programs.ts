// The Go programs the Kubernetes images hold (etcd, etcdutl, kube-apiserver, ...), built from their Go modules by
// scripts/go-component.sh for the host's architecture: the first build of one takes minutes, the next a link or less.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");

/** The path of `name` built for amd64 (the script prints it last). */
export function goProgram(name: string): string {
  const out = execFileSync("bash", [path.join(repo, "scripts/go-component.sh"), name, "amd64"], {
    cwd: repo,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  return out.trim().split("\n").at(-1)!;
}
