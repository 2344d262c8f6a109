// Paths and readers for the Talos fixtures under test/fixtures/talos-api.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

/** Repository root: tests run from dist/test/unit/<area>/. */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
export const talosApiDir = path.join(repoRoot, "test/fixtures/talos-api");
export const fixturesDir = path.join(talosApiDir, "fixtures");

export function readFixture(relative: string): string {
  return readFileSync(path.join(fixturesDir, relative), "utf8");
}

export function fromBase64(value: string): string {
  return Buffer.from(value, "base64").toString("utf8");
}

export interface FixtureSecrets {
  cluster: { id: string; secret: string };
  secrets: { bootstraptoken: string; secretboxencryptionsecret: string };
  trustdinfo: { token: string };
  certs: Record<"etcd" | "k8s" | "k8saggregator" | "os", { crt: string; key: string }> & {
    k8sserviceaccount: { key: string };
  };
}

export function fixtureSecrets(): FixtureSecrets {
  return parse(readFixture("generate/secrets/secrets.yaml")) as FixtureSecrets;
}
