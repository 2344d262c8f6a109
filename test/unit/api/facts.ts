// Reduces a schema to comparable "facts": one string key per file, message,
// field, enum, enum value, service and method, each mapped to a string that
// holds everything the wire depends on. Three sources produce the same shape:
// the published FileDescriptorSet, the COSI tables of cosi-state.md, and the
// protobufjs Root loaded from our own .proto files.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import protobuf from "protobufjs";

export type Facts = Map<string, string>;

const SCALARS = new Set([
  "double",
  "float",
  "int32",
  "int64",
  "uint32",
  "uint64",
  "sint32",
  "sint64",
  "fixed32",
  "fixed64",
  "sfixed32",
  "sfixed64",
  "bool",
  "string",
  "bytes",
]);
// Scalars that proto3 packs when repeated (all but string and bytes).
const PACKABLE = new Set([...SCALARS].filter((t) => t !== "string" && t !== "bytes"));

interface FieldShape {
  number: number;
  label: "optional" | "repeated" | "required";
  type: string; // "TYPE_STRING", "TYPE_MESSAGE", ...
  typeName?: string; // ".pkg.Name" for messages and enums
  proto3Optional?: boolean;
  oneof?: string;
  packed?: boolean;
  map?: { key: string; value: string; valueTypeName?: string };
}

function renderField(f: FieldShape): string {
  if (f.map) {
    const v = f.map.valueTypeName ? `${f.map.value} ${f.map.valueTypeName}` : f.map.value;
    return `#${f.number} map<${f.map.key}, ${v}>`;
  }
  let s = `#${f.number} ${f.label} ${f.type}`;
  if (f.typeName) s += ` ${f.typeName}`;
  if (f.proto3Optional) s += " proto3_optional";
  if (f.oneof) s += ` oneof=${f.oneof}`;
  if (f.packed !== undefined) s += ` packed=${f.packed}`;
  return s;
}

function scalarType(name: string): string {
  return `TYPE_${name.toUpperCase()}`;
}

// ---------------------------------------------------------------------------
// The published descriptor set.

// Plain-object view of the descriptor messages we read (protobufjs toObject, enums as strings).
interface DField {
  name: string;
  number: number;
  label: string;
  type: string;
  typeName?: string;
  oneofIndex?: number;
  proto3Optional?: boolean;
  options?: { packed?: boolean };
  extendee?: string;
}
interface DMessage {
  name: string;
  field?: DField[];
  nestedType?: DMessage[];
  enumType?: DEnum[];
  oneofDecl?: { name: string }[];
  options?: { mapEntry?: boolean };
}
interface DEnum {
  name: string;
  value?: { name: string; number: number }[];
}
interface DService {
  name: string;
  method?: {
    name: string;
    inputType: string;
    outputType: string;
    clientStreaming?: boolean;
    serverStreaming?: boolean;
  }[];
}
export interface DFile {
  name: string;
  package?: string;
  syntax?: string;
  messageType?: DMessage[];
  enumType?: DEnum[];
  service?: DService[];
  extension?: DField[];
}

/** Decodes a binary FileDescriptorSet with protobufjs's descriptor extension. */
export function readDescriptorSet(bytes: Buffer): DFile[] {
  const require = createRequire(import.meta.url);
  const descriptor = require("protobufjs/ext/descriptor") as { FileDescriptorSet: protobuf.Type };
  const set = descriptor.FileDescriptorSet.decode(bytes);
  const plain = descriptor.FileDescriptorSet.toObject(set, { enums: String, longs: Number }) as { file: DFile[] };
  return plain.file;
}

function descriptorFieldShape(f: DField, owner: DMessage, ownerName: string, proto3: boolean): FieldShape {
  const label = f.label.replace("LABEL_", "").toLowerCase() as FieldShape["label"];
  const shape: FieldShape = { number: f.number, label, type: f.type };
  if (f.typeName) shape.typeName = f.typeName;
  // A map field is a repeated message whose type is a nested map-entry message of the owner.
  if (f.type === "TYPE_MESSAGE" && label === "repeated" && f.typeName?.startsWith(`${ownerName}.`)) {
    const entry = (owner.nestedType ?? []).find((n) => `${ownerName}.${n.name}` === f.typeName);
    if (entry?.options?.mapEntry) {
      const key = entry.field?.find((x) => x.number === 1);
      const value = entry.field?.find((x) => x.number === 2);
      if (!key || !value) throw new Error(`map entry ${f.typeName} lacks key or value`);
      const map: FieldShape["map"] = { key: key.type, value: value.type };
      if (value.typeName) map.valueTypeName = value.typeName;
      return { number: f.number, label, type: "map", map };
    }
  }
  if (f.proto3Optional) shape.proto3Optional = true;
  else if (f.oneofIndex !== undefined) shape.oneof = owner.oneofDecl?.[f.oneofIndex]?.name ?? `#${f.oneofIndex}`;
  const base = f.type.replace("TYPE_", "").toLowerCase();
  if (label === "repeated" && (PACKABLE.has(base) || f.type === "TYPE_ENUM")) {
    shape.packed = f.options?.packed ?? proto3;
  }
  return shape;
}

function addDescriptorEnum(facts: Facts, e: DEnum, scope: string): void {
  const name = `${scope}.${e.name}`;
  facts.set(`enum ${name}`, "enum");
  for (const v of e.value ?? []) facts.set(`enumvalue ${name}.${v.name}`, String(v.number));
}

function addDescriptorMessage(facts: Facts, m: DMessage, scope: string, proto3: boolean): void {
  const name = `${scope}.${m.name}`;
  if (m.options?.mapEntry) return; // represented by the map field that uses it
  facts.set(`message ${name}`, "message");
  for (const f of m.field ?? [])
    facts.set(`field ${name}.${f.name}`, renderField(descriptorFieldShape(f, m, name, proto3)));
  for (const e of m.enumType ?? []) addDescriptorEnum(facts, e, name);
  for (const n of m.nestedType ?? []) addDescriptorMessage(facts, n, name, proto3);
}

/** Facts of every descriptor file accepted by `include` (by file name). */
export function descriptorFacts(files: DFile[], include: (fileName: string) => boolean): Facts {
  const facts: Facts = new Map();
  for (const file of files) {
    if (!include(file.name)) continue;
    const pkg = file.package ?? "";
    const scope = pkg ? `.${pkg}` : "";
    const proto3 = file.syntax === "proto3";
    facts.set(`file ${file.name}`, `package=${pkg}`);
    for (const e of file.enumType ?? []) addDescriptorEnum(facts, e, scope);
    for (const m of file.messageType ?? []) addDescriptorMessage(facts, m, scope, proto3);
    for (const s of file.service ?? []) {
      const sname = `${scope}.${s.name}`;
      facts.set(`service ${sname}`, "service");
      for (const me of s.method ?? []) {
        facts.set(
          `method ${sname}.${me.name}`,
          renderMethod(me.inputType, me.outputType, !!me.clientStreaming, !!me.serverStreaming),
        );
      }
    }
  }
  return facts;
}

function renderMethod(input: string, output: string, clientStreaming: boolean, serverStreaming: boolean): string {
  return `in=${input} out=${output} client_streaming=${clientStreaming} server_streaming=${serverStreaming}`;
}

// ---------------------------------------------------------------------------
// The COSI tables of cosi-state.md (§1 files and service, §2 messages).

function stripCell(s: string): string {
  return s.replace(/`/g, "").trim();
}

function tableRows(lines: string[], start: number): { rows: string[][]; end: number } {
  const rows: string[][] = [];
  let i = start;
  for (; i < lines.length && lines[i]!.trim().startsWith("|"); i++) {
    const cells = lines[i]!.trim()
      .replace(/^\||\|$/g, "")
      .split("|")
      .map(stripCell);
    if (cells.every((c) => /^-+$/.test(c))) continue;
    rows.push(cells);
  }
  return { rows, end: i };
}

/**
 * Parses the COSI contract tables of cosi-state.md into facts. Throws when a
 * line it must understand does not parse, so a format change cannot silently
 * shrink what the wire test checks.
 */
export function cosiMarkdownFacts(text: string): Facts {
  const lines = text.split("\n");
  const facts: Facts = new Map();
  // Declarations first, fields resolved afterwards (a field's type may be declared later).
  const enums = new Set<string>();
  const pending: { pkg: string; message: string; spec: string }[] = [];
  let section = "";
  let pkg = "";
  let service = "";

  const sectionOf = (line: string) => /^## (\d+)\./.exec(line)?.[1];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const sec = sectionOf(line);
    if (sec) {
      section = sec;
      continue;
    }
    if (section === "1") {
      const svc = /^Service: \*\*`([\w.]+)`\*\*/.exec(line);
      if (svc) service = svc[1]!;
      if (/^\|\s*proto file/.test(line)) {
        const { rows, end } = tableRows(lines, i);
        for (const [file, p] of rows.slice(1)) facts.set(`file ${file}`, `package=${p}`);
        i = end - 1;
      } else if (/^\|\s*Method\s*\|\s*Request/.test(line)) {
        if (!service) throw new Error("cosi-state.md §1: method table before the Service line");
        const spkg = service.slice(0, service.lastIndexOf("."));
        facts.set(`service .${service}`, "service");
        const { rows, end } = tableRows(lines, i);
        for (const [m, req, res, streaming] of rows.slice(1)) {
          if (!m || !req || !res || !streaming) throw new Error(`cosi-state.md §1: bad method row ${m}`);
          const serverStream = /^server stream/.test(streaming);
          if (!serverStream && streaming !== "unary")
            throw new Error(`cosi-state.md §1: unknown streaming "${streaming}"`);
          facts.set(`method .${service}.${m}`, renderMethod(`.${spkg}.${req}`, `.${spkg}.${res}`, false, serverStream));
        }
        i = end - 1;
      }
      continue;
    }
    if (section !== "2") continue;
    const head = /^### ([\w.]+) \(/.exec(line);
    if (head) {
      pkg = head[1]!;
      continue;
    }
    const enumLine = /^\*\*([\w.]+)\*\* \(enum\): (.+?)\.?$/.exec(line);
    if (enumLine) {
      const name = `.${pkg}.${enumLine[1]}`;
      enums.add(name);
      facts.set(`enum ${name}`, "enum");
      for (const part of enumLine[2]!.split(",")) {
        const kv = /^\s*(\w+)=(\d+)\s*$/.exec(part);
        if (!kv) throw new Error(`cosi-state.md: bad enum value "${part}" in ${name}`);
        facts.set(`enumvalue ${name}.${kv[1]}`, kv[2]!);
      }
      continue;
    }
    const inline = /^\*\*([\w.]+)\*\*: (.+?)\.?$/.exec(line);
    if (inline) {
      facts.set(`message .${pkg}.${inline[1]}`, "message");
      for (const spec of inline[2]!.split(";"))
        pending.push({ pkg, message: inline[1]!, spec: spec.replace(/`/g, "") });
      continue;
    }
    const titled = /^\*\*([\w.]+)\*\*\s*$/.exec(line);
    if (titled) {
      facts.set(`message .${pkg}.${titled[1]}`, "message");
      let j = i + 1;
      while (j < lines.length && !lines[j]!.trim().startsWith("|")) j++;
      const { rows, end } = tableRows(lines, j);
      for (const [num, field, type] of rows.slice(1))
        pending.push({ pkg, message: titled[1]!, spec: `${num} ${field} ${type}` });
      i = end - 1;
      continue;
    }
    if (/^\|\s*Message\s*\|\s*Fields/.test(line)) {
      const { rows, end } = tableRows(lines, i);
      for (const [message, fields] of rows.slice(1)) {
        if (!message || fields === undefined) throw new Error(`cosi-state.md: bad message row ${message}`);
        facts.set(`message .${pkg}.${message}`, "message");
        const cleaned = fields.replace(/\([^)]*\)/g, "").trim();
        if (!cleaned) continue;
        for (const spec of cleaned.split(";")) pending.push({ pkg, message, spec });
      }
      i = end - 1;
    }
  }

  for (const { pkg: p, message, spec } of pending) {
    const m = /^\s*(\d+)\s+(\w+)\s+(.+?)\s*$/.exec(spec);
    if (!m) throw new Error(`cosi-state.md: cannot read field "${spec}" of ${p}.${message}`);
    const [, num, name, rawType] = m as unknown as [string, string, string, string];
    facts.set(`field .${p}.${message}.${name}`, renderField(markdownFieldShape(Number(num), rawType, p, enums)));
  }
  return facts;
}

function markdownTypeRef(t: string, pkg: string, enums: Set<string>): { type: string; typeName?: string } {
  if (SCALARS.has(t)) return { type: scalarType(t) };
  const typeName = t.startsWith("google.") ? `.${t}` : `.${pkg}.${t}`;
  return { type: enums.has(typeName) ? "TYPE_ENUM" : "TYPE_MESSAGE", typeName };
}

function markdownFieldShape(number: number, rawType: string, pkg: string, enums: Set<string>): FieldShape {
  // "string (decimal ...)" -> "string"; "string, opt" -> optional presence.
  let t = rawType.replace(/\s*\(.*\)\s*$/, "").trim();
  let proto3Optional = false;
  if (/,\s*opt$/.test(t)) {
    proto3Optional = true;
    t = t.replace(/,\s*opt$/, "").trim();
  }
  const map = /^map<\s*(\w+)\s*,\s*([\w.]+)\s*>$/.exec(t);
  if (map) {
    const value = markdownTypeRef(map[2]!, pkg, enums);
    const shape: FieldShape = {
      number,
      label: "repeated",
      type: "map",
      map: { key: scalarType(map[1]!), value: value.type },
    };
    if (value.typeName) shape.map!.valueTypeName = value.typeName;
    return shape;
  }
  const repeated = /^repeated\s+/.test(t);
  if (repeated) t = t.replace(/^repeated\s+/, "");
  const ref = markdownTypeRef(t, pkg, enums);
  const shape: FieldShape = { number, label: repeated ? "repeated" : "optional", type: ref.type };
  if (ref.typeName) shape.typeName = ref.typeName;
  if (proto3Optional) shape.proto3Optional = true;
  if (repeated && (PACKABLE.has(t) || ref.type === "TYPE_ENUM")) shape.packed = true;
  return shape;
}

// ---------------------------------------------------------------------------
// Our protos, as protobufjs loaded them.

function loadedFieldShape(f: protobuf.Field): FieldShape {
  f.resolve();
  const typeOf = (t: string, resolved: protobuf.Type | protobuf.Enum | null): { type: string; typeName?: string } => {
    if (resolved instanceof protobuf.Enum) return { type: "TYPE_ENUM", typeName: resolved.fullName };
    if (resolved instanceof protobuf.Type) return { type: "TYPE_MESSAGE", typeName: resolved.fullName };
    return { type: scalarType(t) };
  };
  if (f instanceof protobuf.MapField) {
    const value = typeOf(f.type, f.resolvedType);
    const shape: FieldShape = {
      number: f.id,
      label: "repeated",
      type: "map",
      map: { key: scalarType(f.keyType), value: value.type },
    };
    if (value.typeName) shape.map!.valueTypeName = value.typeName;
    return shape;
  }
  const ref = typeOf(f.type, f.resolvedType);
  const label = f.repeated ? "repeated" : f.required ? "required" : "optional";
  const shape: FieldShape = { number: f.id, label, type: ref.type };
  if (ref.typeName) shape.typeName = ref.typeName;
  if (f.options?.proto3_optional) shape.proto3Optional = true;
  else if (f.partOf) shape.oneof = f.partOf.name;
  if (f.repeated && (PACKABLE.has(f.type) || ref.type === "TYPE_ENUM")) shape.packed = f.packed;
  return shape;
}

function addLoaded(facts: Facts, ns: protobuf.NamespaceBase, skip: (fullName: string) => boolean): void {
  for (const obj of ns.nestedArray) {
    if (skip(obj.fullName)) continue;
    if (obj instanceof protobuf.Type) {
      facts.set(`message ${obj.fullName}`, "message");
      for (const f of obj.fieldsArray) facts.set(`field ${obj.fullName}.${f.name}`, renderField(loadedFieldShape(f)));
    } else if (obj instanceof protobuf.Enum) {
      facts.set(`enum ${obj.fullName}`, "enum");
      for (const [name, num] of Object.entries(obj.values)) facts.set(`enumvalue ${obj.fullName}.${name}`, String(num));
    } else if (obj instanceof protobuf.Service) {
      facts.set(`service ${obj.fullName}`, "service");
      for (const m of obj.methodsArray) {
        m.resolve();
        facts.set(
          `method ${obj.fullName}.${m.name}`,
          renderMethod(
            m.resolvedRequestType!.fullName,
            m.resolvedResponseType!.fullName,
            !!m.requestStream,
            !!m.responseStream,
          ),
        );
      }
    }
    if (obj instanceof protobuf.Namespace || obj instanceof protobuf.Type) addLoaded(facts, obj, skip);
  }
}

function listProtoFiles(dir: string, rel = ""): string[] {
  const out: string[] = [];
  for (const ent of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const child = path.posix.join(rel, ent.name);
    if (ent.isDirectory()) out.push(...listProtoFiles(dir, child));
    else if (ent.name.endsWith(".proto")) out.push(child);
  }
  return out;
}

/**
 * Facts of our loaded Root plus one `file` fact per .proto under protoDir (its
 * declared package). protobufjs's bundled google.protobuf types are skipped.
 */
export function loadedFacts(root: protobuf.Root, protoDir: string): Facts {
  const facts: Facts = new Map();
  for (const file of listProtoFiles(protoDir)) {
    const pkg = /^\s*package\s+([\w.]+)\s*;/m.exec(fs.readFileSync(path.join(protoDir, file), "utf8"))?.[1] ?? "";
    facts.set(`file ${file}`, `package=${pkg}`);
  }
  addLoaded(facts, root, (name) => name === ".google.protobuf" || name.startsWith(".google.protobuf."));
  return facts;
}

/** Every difference, one line each, sorted; empty when the two agree. */
export function diffFacts(expected: Facts, ours: Facts): string[] {
  const out: string[] = [];
  for (const [k, v] of expected) {
    const o = ours.get(k);
    if (o === undefined) out.push(`missing in ours: ${k} (${v})`);
    else if (o !== v) out.push(`different: ${k}: contract "${v}", ours "${o}"`);
  }
  for (const [k, v] of ours) if (!expected.has(k)) out.push(`extra in ours: ${k} (${v})`);
  return out.sort();
}
