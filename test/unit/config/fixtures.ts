// Reads the Talos v1.7 fixtures in place (never copied into the repo).
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
export const fixturesDir = path.join(repoRoot, "test/fixtures/talos-api/fixtures");

export function fixture(rel: string): string {
  return readFileSync(path.join(fixturesDir, rel), "utf8");
}

/** Parsed YAML documents of a text (structure comparison, order of keys irrelevant). */
export function yamlDocs(text: string): unknown[] {
  return parseAllDocuments(text).map((d) => d.toJS());
}

export const stabilityConfigs = ["base-controlplane", "base-worker", "overrides-controlplane", "overrides-worker"].map(
  (name) => ({ name, text: fixture(`types/v1alpha1/stability/v1.7/${name}.yaml`) }),
);

export const otherKindFixtures: [string, string][] = [
  ["types/network/defaultactionconfig.yaml", "NetworkDefaultActionConfig"],
  ["types/network/ruleconfig.yaml", "NetworkRuleConfig"],
  ["types/runtime/eventsink.yaml", "EventSinkConfig"],
  ["types/runtime/kmsglog.yaml", "KmsgLogConfig"],
  ["types/runtime/watchdogtimer.yaml", "WatchdogTimerConfig"],
  ["types/runtime/extensions/extension_service_config.yaml", "ExtensionServiceConfig"],
  ["types/siderolink/document.yaml", "SideroLinkConfig"],
];
