// talos.config=<url> variables: ${uuid}, ${serial}, ${mac}, ${hostname}, ${code}
// (case-insensitive), replaced in the query's values as Talos does, and in the path
// (`http://host/${uuid}`); a bare `?uuid=` is Talos's legacy form of ${uuid}.

export const urlVariables = ["uuid", "serial", "mac", "hostname", "code"] as const;
export type UrlVariable = (typeof urlVariables)[number];
export type UrlValues = Partial<Record<UrlVariable, string>>;

const pattern = (v: UrlVariable) => new RegExp(`\\$\\{${v}\\}`, "gi");

function splitUrl(raw: string): { base: string; query: string | undefined; fragment: string } {
  const hash = raw.indexOf("#");
  const fragment = hash >= 0 ? raw.slice(hash) : "";
  const rest = hash >= 0 ? raw.slice(0, hash) : raw;
  const q = rest.indexOf("?");
  return q >= 0
    ? { base: rest.slice(0, q), query: rest.slice(q + 1), fragment }
    : { base: rest, query: undefined, fragment };
}

const legacyUuid = (params: URLSearchParams) => params.getAll("uuid").length === 1 && params.get("uuid")!.trim() === "";

/** The variables a talos.config URL asks for. */
export function urlVariablesUsed(raw: string): UrlVariable[] {
  const { base, query } = splitUrl(raw);
  const params = new URLSearchParams(query ?? "");
  return urlVariables.filter(
    (v) =>
      pattern(v).test(base) ||
      [...params.values()].some((value) => pattern(v).test(value)) ||
      (v === "uuid" && legacyUuid(params)),
  );
}

/**
 * The URL with each variable replaced by its value (escaped for where it stands). A query
 * holding a variable is encoded again with its keys sorted, as Go's url.Values.Encode does.
 */
export function substituteConfigUrl(raw: string, values: UrlValues): string {
  const used = urlVariablesUsed(raw);
  if (used.length === 0) return raw;
  const { base, query, fragment } = splitUrl(raw);
  let path = base;
  for (const v of used) path = path.replace(pattern(v), encodeURIComponent(values[v] ?? ""));
  if (query === undefined) return path + fragment;
  const params = new URLSearchParams(query);
  const inQuery = used.some(
    (v) => [...params.values()].some((value) => pattern(v).test(value)) || (v === "uuid" && legacyUuid(params)),
  );
  if (!inQuery) return `${path}?${query}${fragment}`;
  const out = new URLSearchParams();
  const uuidLegacy = legacyUuid(params);
  for (const [key, value] of params) {
    if (key === "uuid" && uuidLegacy) {
      out.append(key, values.uuid ?? "");
      continue;
    }
    let replaced = value;
    for (const v of used) replaced = replaced.replace(pattern(v), values[v] ?? "");
    out.append(key, replaced);
  }
  out.sort();
  return `${path}?${out.toString()}${fragment}`;
}
