// google.protobuf.Struct from a plain JSON-shaped object, as Go's structpb.NewStruct
// builds one for Talos's map[string]any spec fields (kubelet configuration, extraConfig).
// protobufjs loads struct.proto from its own copy, whose fields are camelCase.

/** A JSON-shaped object (what Kubernetes calls unstructured). */
export type Unstructured = Record<string, unknown>;

interface ProtoValue {
  nullValue?: 0;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: { fields: Record<string, ProtoValue> };
  listValue?: { values: ProtoValue[] };
}

function valueProto(v: unknown): ProtoValue {
  if (v === null || v === undefined) return { nullValue: 0 };
  if (typeof v === "number") return { numberValue: v };
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "boolean") return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(valueProto) } };
  // What is left is a JSON object (specs hold only JSON-shaped values).
  return { structValue: structProto(v as Unstructured) };
}

/** The `google.protobuf.Struct` message object for `obj`. */
export function structProto(obj: Unstructured): { fields: Record<string, ProtoValue> } {
  return { fields: Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, valueProto(v)])) };
}
