// google.protobuf.Struct from a plain JSON-shaped object, as Go's structpb.NewStruct
// builds one for Talos's map[string]any spec fields (kubelet configuration, extraConfig).

/** A JSON-shaped object (what Kubernetes calls unstructured). */
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
  return { struct_value: structProto(v as Unstructured) };
}

/** The `google.protobuf.Struct` message object for `obj`. */
export function structProto(obj: Unstructured): { fields: Record<string, ProtoValue> } {
  return { fields: Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, valueProto(v)])) };
}
