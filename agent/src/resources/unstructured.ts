// JSON-shaped values (Kubernetes objects kept as maps, as Talos keeps a static pod as
// map[string]any): their google.protobuf.Struct encoding (structpb's) and their key
// order when Go's yaml.v3 marshals a map.

export type Unstructured = Record<string, unknown>;

interface ProtoValue {
  null_value?: 0;
  number_value?: number;
  string_value?: string;
  bool_value?: boolean;
  struct_value?: { fields: Record<string, ProtoValue> };
  list_value?: { values: ProtoValue[] };
}

function valueProto(v: unknown): ProtoValue {
  if (v === null || v === undefined) return { null_value: 0 };
  if (typeof v === "number") return { number_value: v };
  if (typeof v === "string") return { string_value: v };
  if (typeof v === "boolean") return { bool_value: v };
  if (Array.isArray(v)) return { list_value: { values: v.map(valueProto) } };
  return { struct_value: unstructuredProto(v as Unstructured) };
}

/** The `google.protobuf.Struct` message object for `obj`. */
export function unstructuredProto(obj: Unstructured): { fields: Record<string, ProtoValue> } {
  return { fields: Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, valueProto(v)])) };
}

const isDigit = (c: string) => c >= "0" && c <= "9";
const isLetter = (c: string) => /\p{L}/u.test(c);

/** yaml.v3's ordering of string map keys: letters by code point, digit runs by numeric value. */
export function goYamlKeyLess(a: string, b: string): boolean {
  const ar = [...a];
  const br = [...b];
  let digits = false;
  for (let i = 0; i < ar.length && i < br.length; i++) {
    if (ar[i] === br[i]) {
      digits = isDigit(ar[i]);
      continue;
    }
    const al = isLetter(ar[i]);
    const bl = isLetter(br[i]);
    if (al && bl) return ar[i] < br[i];
    if (al || bl) return digits ? al : bl;
    let an = 0n;
    let bn = 0n;
    if (ar[i] === "0" || br[i] === "0") {
      for (let j = i - 1; j >= 0 && isDigit(ar[j]); j--) {
        if (ar[j] !== "0") {
          an = 1n;
          bn = 1n;
          break;
        }
      }
    }
    let ai = i;
    for (; ai < ar.length && isDigit(ar[ai]); ai++) an = an * 10n + BigInt(ar[ai].charCodeAt(0) - 48);
    let bi = i;
    for (; bi < br.length && isDigit(br[bi]); bi++) bn = bn * 10n + BigInt(br[bi].charCodeAt(0) - 48);
    if (an !== bn) return an < bn;
    if (ai !== bi) return ai < bi;
    return ar[i] < br[i];
  }
  return ar.length < br.length;
}

/** A copy of `value` whose maps (at every depth) list their keys in yaml.v3's order. */
export function goYamlOrdered<T>(value: T): T {
  if (Array.isArray(value)) return value.map(goYamlOrdered) as T;
  if (value === null || typeof value !== "object") return value;
  const keys = Object.keys(value).sort((x, y) => (goYamlKeyLess(x, y) ? -1 : goYamlKeyLess(y, x) ? 1 : 0));
  // Rebuilding the object with the same keys keeps its shape; the cast restores the caller's type.
  return Object.fromEntries(keys.map((k) => [k, goYamlOrdered((value as Record<string, unknown>)[k])])) as T;
}
