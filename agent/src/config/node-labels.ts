// Talos's checks of `.machine.nodeLabels` and `.machine.nodeTaints` (pkg/machinery/labels):
// keys are Kubernetes qualified names (an optional DNS-1123 subdomain prefix and `/`, then
// a name of at most 63 characters), label values at most 63 characters of the same
// alphabet, a taint `value:Effect` or `Effect` with one of the three effects. Problems are
// returned in key order with Talos's texts.

const qualifiedName = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME_MAX = 63;
const SUBDOMAIN_MAX = 253;

/** The taint effects Kubernetes knows (constants.ValidEffects). */
export const taintEffects: readonly string[] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/** Go's %q of a string (printable ASCII as JSON writes it). */
const q = (s: string): string => JSON.stringify(s);

function subdomainProblem(value: string): string | undefined {
  if (value.length > SUBDOMAIN_MAX) return `domain name length exceeds limit of ${SUBDOMAIN_MAX}: ${q(value)}`;
  if (!dns1123Subdomain.test(value)) return `domain doesn't match required format: ${q(value)}`;
  return undefined;
}

export function qualifiedNameProblem(value: string): string | undefined {
  const parts = value.split("/");
  if (parts.length > 2) return `invalid format: too many slashes: ${q(value)}`;
  const name = parts.at(-1)!;
  if (parts.length === 2) {
    const prefix = parts[0]!;
    if (prefix === "") return `prefix cannot be empty: ${q(value)}`;
    const problem = subdomainProblem(prefix);
    if (problem) return `prefix ${q(prefix)} is invalid: ${problem}`;
  }
  if (name === "") return `name cannot be empty: ${q(value)}`;
  if (name.length > NAME_MAX) return `name is too long: ${q(value)} (limit is ${NAME_MAX})`;
  if (!qualifiedName.test(name)) return `name ${q(name)} is invalid`;
  return undefined;
}

function labelValueProblem(value: string): string | undefined {
  if (value.length > NAME_MAX) return `label value length exceeds limit of ${NAME_MAX}: ${q(value)}`;
  if (!labelValue.test(value)) return `label value ${q(value)} is invalid`;
  return undefined;
}

const sortedKeys = (m: Record<string, string>): string[] => Object.keys(m).sort();

export function nodeLabelProblems(labels: Record<string, string>): string[] {
  return sortedKeys(labels).flatMap((key) =>
    [qualifiedNameProblem(key), labelValueProblem(labels[key]!)].filter((p): p is string => p !== undefined),
  );
}

export function nodeTaintProblems(taints: Record<string, string>): string[] {
  const problems: string[] = [];
  for (const key of sortedKeys(taints)) {
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem) {
      problems.push(keyProblem);
      continue;
    }
    const text = taints[key]!;
    const at = text.indexOf(":");
    const effect = at < 0 ? text : text.slice(at + 1);
    if (!taintEffects.includes(effect)) {
      problems.push(`invalid taint effect: ${q(effect)}`);
      continue;
    }
    const valueProblem = at < 0 ? undefined : labelValueProblem(text.slice(0, at));
    if (valueProblem) problems.push(valueProblem);
  }
  return problems;
}
