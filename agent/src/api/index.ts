// The node API schema: the method table read from agent/api/**/*.proto, and codecs
// that protobufjs builds for a package's files the first time one of its messages is used.
//
// One conversion convention everywhere (callers rely on it): snake_case field
// names exactly as in the protos, enums as numbers, 64-bit integers as numbers,
// bytes as Buffer, defaults filled in, oneof virtual fields present. A request a
// server decodes keeps a 64-bit integer past 2^53 exact, as its decimal string.
import type * as grpc from "@grpc/grpc-js";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { BasaltError, describeError, InvalidInputError, NotFoundError } from "../errors.js";

/** A file of agent/api that protobufjs cannot load (a broken image or proto directory). */
export class ProtoLoadError extends BasaltError {}

/** One RPC of a service we know, as seen on the wire. */
export interface MethodInfo {
  /** Service full name, e.g. `machine.MachineService`. */
  service: string;
  /** Method name, e.g. `Version`. */
  name: string;
  /** gRPC path, e.g. `/machine.MachineService/Version`. */
  path: string;
  /** Request message full name, e.g. `google.protobuf.Empty`. */
  requestType: string;
  /** Response message full name, e.g. `machine.VersionResponse`. */
  responseType: string;
  requestStream: boolean;
  responseStream: boolean;
}

/** Options for protobufjs `toObject`, shared by `decode` and the typed service definitions. */
export const conversionOptions: protobuf.IConversionOptions = Object.freeze({
  enums: Number,
  longs: Number,
  bytes: Buffer,
  defaults: true,
  oneofs: true,
});

// A file that every complete proto directory holds; used to recognise one.
const MARKER = path.join("machine", "machine.proto");

function isProtoDir(dir: string): boolean {
  return fs.existsSync(path.join(dir, MARKER));
}

/** Where this module (or the bundle containing it) lives; import.meta.url is empty in a CJS bundle. */
function startDirs(): string[] {
  const dirs: string[] = [];
  try {
    if (import.meta.url) dirs.push(path.dirname(fileURLToPath(import.meta.url)));
  } catch {
    // not a file: URL (e.g. data: in tests); fall through to argv
  }
  if (process.argv[1]) dirs.push(path.dirname(path.resolve(process.argv[1])));
  return dirs;
}

/**
 * Candidate proto directories in order: $BASALT_PROTO_DIR, then, walking up from
 * this module, `<dir>/agent/api` (source tree, dist/ build) or `<dir>/api` (an
 * image ships agent/api beside the bundle).
 */
function candidateDirs(): string[] {
  const out: string[] = [];
  const fromEnv = process.env.BASALT_PROTO_DIR;
  if (fromEnv) return [path.resolve(fromEnv)];
  for (const start of startDirs()) {
    for (let dir = start; ; dir = path.dirname(dir)) {
      out.push(path.join(dir, "agent", "api"), path.join(dir, "api"));
      if (path.dirname(dir) === dir) break;
    }
  }
  return out;
}

function resolveProtoDir(): { dir: string; searched: string[] } {
  const searched = candidateDirs();
  const found = searched.find(isProtoDir);
  return { dir: found ?? searched[0] ?? path.resolve("agent", "api"), searched };
}

const located = resolveProtoDir();

/** Absolute path of the directory holding our .proto files. */
export const protoDir: string = located.dir;

function listProtos(dir: string, rel = ""): string[] {
  const out: string[] = [];
  for (const ent of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const child = path.join(rel, ent.name);
    if (ent.isDirectory()) out.push(...listProtos(dir, child));
    else if (ent.name.endsWith(".proto")) out.push(child);
  }
  return out.sort();
}

// protobufjs finds Buffer, fs and long by probing `require` through eval, which
// fails inside an ESM bundle: bytes would then decode as Uint8Array and loadSync
// would have no fs. Hand it the node modules it wants.
if (!protobuf.util.Buffer) {
  protobuf.util.Buffer = Buffer;
  protobuf.configure();
}
if (!protobuf.util.fs) protobuf.util.fs = fs;

// Lets callers hand a Date where a google.protobuf.Timestamp goes (resource
// metadata keeps Dates). Registered before any type is set up.
const timestampWrapper = {
  fromObject(this: protobuf.Type, object: { [k: string]: unknown }): protobuf.Message {
    if (object instanceof Date) {
      const ms = object.getTime();
      const seconds = Math.floor(ms / 1000);
      return this.create({ seconds, nanos: (ms - seconds * 1000) * 1e6 });
    }
    return this.fromObject(object);
  },
  toObject(
    this: protobuf.Type,
    message: protobuf.Message,
    options?: protobuf.IConversionOptions,
  ): { [k: string]: unknown } {
    return this.toObject(message, options);
  },
};
protobuf.wrappers[".google.protobuf.Timestamp"] = timestampWrapper;

/** One .proto file of agent/api as read from its text: its package, imports and services, nothing parsed by protobufjs. */
interface ProtoFileSummary {
  file: string;
  pkg: string;
  imports: string[];
  methods: MethodInfo[];
}

/** The files and method table, read once from the proto text (a few regular expressions over ~80 KB). */
interface ProtoIndex {
  files: ProtoFileSummary[];
  /** Package -> its files (a name is looked up in the longest package that prefixes it). */
  packages: Map<string, string[]>;
  methods: MethodInfo[];
}

let index: ProtoIndex | undefined;

function requireProtoDir(): void {
  if (!isProtoDir(protoDir)) {
    throw new NotFoundError(
      `API proto directory not found (set BASALT_PROTO_DIR); looked in ${located.searched.join(", ")}`,
      {
        protoDir,
      },
    );
  }
}

const withoutComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/[^\n]*/g, "");

/** A type named in an rpc declaration, fully qualified: a dotted name is already (our protos write them so), a bare one is the file's package's. */
const qualify = (pkg: string, name: string) => (name.includes(".") ? name.replace(/^\./, "") : `${pkg}.${name}`);

function summarize(file: string): ProtoFileSummary {
  const text = withoutComments(fs.readFileSync(path.join(protoDir, file), "utf8"));
  const pkg = /^\s*package\s+([\w.]+)\s*;/m.exec(text)?.[1] ?? "";
  const imports = [...text.matchAll(/^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;/gm)].map((m) => m[1]!);
  const methods: MethodInfo[] = [];
  for (const svc of text.matchAll(/\bservice\s+(\w+)\s*\{([^}]*)\}/g)) {
    const service = pkg ? `${pkg}.${svc[1]}` : svc[1]!;
    for (const rpc of svc[2]!.matchAll(
      /\brpc\s+(\w+)\s*\(\s*(stream\s+)?([\w.]+)\s*\)\s*returns\s*\(\s*(stream\s+)?([\w.]+)\s*\)/g,
    )) {
      methods.push({
        service,
        name: rpc[1]!,
        path: `/${service}/${rpc[1]}`,
        requestType: qualify(pkg, rpc[3]!),
        responseType: qualify(pkg, rpc[5]!),
        requestStream: rpc[2] !== undefined,
        responseStream: rpc[4] !== undefined,
      });
    }
  }
  return { file, pkg, imports, methods };
}

function protoIndex(): ProtoIndex {
  if (index) return index;
  requireProtoDir();
  const files = listProtos(protoDir).map(summarize);
  const packages = new Map<string, string[]>();
  for (const f of files) packages.set(f.pkg, [...(packages.get(f.pkg) ?? []), f.file]);
  const methods = files
    .flatMap((f) => f.methods)
    // By code point: localeCompare would load ICU's collation data at start for ASCII names.
    .sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : 0));
  index = { files, packages, methods };
  return index;
}

// One root that grows by package: a process parses only the files whose messages it encodes or decodes (machined's
// start registers every service from the method table alone). Parsing and building all of agent/api took seconds of
// a node's start under emulation.
const root = new protobuf.Root();
// Imports are written relative to the proto directory; google/protobuf/* come bundled with protobufjs.
root.resolvePath = (_origin, target) => (path.isAbsolute(target) ? target : path.join(protoDir, target));

function load(files: string[]): void {
  const fresh = files.filter((f) => !root.files.includes(path.join(protoDir, f)));
  if (fresh.length === 0) return;
  try {
    root.loadSync(fresh, { keepCase: true });
    root.resolveAll();
  } catch (err) {
    throw new ProtoLoadError(
      `cannot load ${fresh.join(", ")} from ${protoDir}: ${describeError(err)}`,
      { files: fresh, protoDir },
      { cause: err },
    );
  }
}

/** Loads the files of the package `fullName` lives in (the longest package that prefixes it). */
function loadFor(fullName: string): void {
  const name = fullName.replace(/^\./, "");
  const { packages, files } = protoIndex();
  if (name.startsWith("google.protobuf.")) {
    // protobufjs's bundled well-known types: the ones our files import.
    const wellKnown = [...new Set(files.flatMap((f) => f.imports).filter((i) => i.startsWith("google/protobuf/")))];
    const fresh = wellKnown.filter((f) => !root.files.includes(f));
    if (fresh.length > 0) root.loadSync(fresh, { keepCase: true });
    return;
  }
  let best: string | undefined;
  for (const pkg of packages.keys()) {
    if ((name === pkg || name.startsWith(pkg + ".")) && (best === undefined || pkg.length > best.length)) best = pkg;
  }
  if (best !== undefined) load(packages.get(best)!);
}

function lookupIn(fullName: string): protobuf.ReflectionObject | null {
  const name = fullName.replace(/^\./, "");
  return root.lookup(name) ?? (loadFor(name), root.lookup(name));
}

/** Every message, enum and service of agent/api (all files loaded). */
export function apiRoot(): protobuf.Root {
  load(protoIndex().files.map((f) => f.file));
  return root;
}

const typeCache = new Map<string, protobuf.Type>();

/** The message type `fullName` (e.g. `machine.VersionResponse`); NotFoundError when unknown. */
export function lookupMessage(fullName: string): protobuf.Type {
  let t = typeCache.get(fullName);
  if (t) return t;
  const found = lookupIn(fullName);
  if (!(found instanceof protobuf.Type))
    throw new NotFoundError(`unknown message type ${fullName}`, { type: fullName });
  t = found;
  typeCache.set(fullName, t);
  return t;
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function encodeWith(type: protobuf.Type, value: object): Buffer {
  try {
    return asBuffer(type.encode(type.fromObject(value as { [k: string]: unknown })).finish());
  } catch (err) {
    throw new InvalidInputError(
      `cannot encode ${type.fullName.slice(1)}: ${(err as Error).message}`,
      {},
      { cause: err },
    );
  }
}

function decodeWith(type: protobuf.Type, bytes: Uint8Array): Record<string, unknown> {
  try {
    return type.toObject(type.decode(asBuffer(bytes)), conversionOptions);
  } catch (err) {
    throw new InvalidInputError(
      `cannot decode ${type.fullName.slice(1)}: ${(err as Error).message}`,
      {},
      { cause: err },
    );
  }
}

const longTypes = new Set(["int64", "uint64", "sint64", "fixed64", "sfixed64"]);

/** `obj` (decoded with longs as strings) with each 64-bit integer a number where one holds it exactly. */
function narrowLongs(type: protobuf.Type, obj: Record<string, unknown>): Record<string, unknown> {
  for (const field of type.fieldsArray) {
    const value = obj[field.name];
    if (value === undefined || value === null) continue;
    field.resolve();
    const nested = field.resolvedType instanceof protobuf.Type ? field.resolvedType : undefined;
    if (!longTypes.has(field.type) && !nested) continue;
    const one = (v: unknown): unknown => {
      if (nested)
        return typeof v === "object" && v !== null && !Buffer.isBuffer(v)
          ? narrowLongs(nested, v as Record<string, unknown>)
          : v;
      const n = Number(v);
      return Number.isSafeInteger(n) ? n : v;
    };
    if (field.map) {
      const entries = value as Record<string, unknown>;
      for (const k of Object.keys(entries)) entries[k] = one(entries[k]);
    } else if (field.repeated) obj[field.name] = (value as unknown[]).map(one);
    else obj[field.name] = one(value);
  }
  return obj;
}

/** Decodes a request as decodeWith does, except that a 64-bit integer a number would round stays its decimal string. */
function decodeRequest(type: protobuf.Type, bytes: Uint8Array): Record<string, unknown> {
  try {
    return narrowLongs(type, type.toObject(type.decode(asBuffer(bytes)), { ...conversionOptions, longs: String }));
  } catch (err) {
    throw new InvalidInputError(
      `cannot decode ${type.fullName.slice(1)}: ${(err as Error).message}`,
      {},
      { cause: err },
    );
  }
}

/** Encodes a plain object (snake_case keys) as message `fullName`. */
export function encode(fullName: string, value: object): Buffer {
  return encodeWith(lookupMessage(fullName), value);
}

/** Decodes `bytes` as message `fullName` into a plain object (see conversionOptions). */
export function decode(fullName: string, bytes: Uint8Array): Record<string, unknown> {
  return decodeWith(lookupMessage(fullName), bytes);
}

/** The methods of service `fullName`, from the method table; NotFoundError when it is not a service of agent/api. */
function methodsOf(fullName: string): MethodInfo[] {
  const name = fullName.replace(/^\./, "");
  const methods = protoIndex().methods.filter((m) => m.service === name);
  if (methods.length === 0) throw new NotFoundError(`unknown service ${fullName}`, { service: fullName });
  return methods;
}

/** A codec resolved on its first use, so defining a service parses nothing. */
function lazyType(fullName: string): () => protobuf.Type {
  let type: protobuf.Type | undefined;
  return () => (type ??= lookupMessage(fullName));
}

const typedDefs = new Map<string, grpc.ServiceDefinition>();
const rawDefs = new Map<string, grpc.ServiceDefinition>();

/**
 * grpc-js definition of service `fullName`, keyed by method name, plain objects in and out;
 * a request's 64-bit integers past 2^53 arrive as decimal strings (decodeRequest).
 */
export function serviceDefinition(fullName: string): grpc.ServiceDefinition {
  const cached = typedDefs.get(fullName);
  if (cached) return cached;
  const def: Record<string, grpc.MethodDefinition<object, Record<string, unknown>>> = {};
  for (const m of methodsOf(fullName)) {
    const req = lazyType(m.requestType);
    const res = lazyType(m.responseType);
    def[m.name] = {
      path: m.path,
      requestStream: m.requestStream,
      responseStream: m.responseStream,
      requestSerialize: (value: object) => encodeWith(req(), value),
      requestDeserialize: (bytes: Buffer) => decodeRequest(req(), bytes),
      responseSerialize: (value: object) => encodeWith(res(), value),
      responseDeserialize: (bytes: Buffer) => decodeWith(res(), bytes),
    };
  }
  typedDefs.set(fullName, def);
  return def;
}

const passThrough = (bytes: Uint8Array): Buffer => asBuffer(bytes);

/** grpc-js definition of service `fullName` that moves message bytes unchanged (for proxying). */
export function rawServiceDefinition(fullName: string): grpc.ServiceDefinition {
  const cached = rawDefs.get(fullName);
  if (cached) return cached;
  const def: Record<string, grpc.MethodDefinition<Uint8Array, Buffer>> = {};
  for (const m of methodsOf(fullName)) {
    def[m.name] = {
      path: m.path,
      requestStream: m.requestStream,
      responseStream: m.responseStream,
      requestSerialize: passThrough,
      requestDeserialize: passThrough,
      responseSerialize: passThrough,
      responseDeserialize: passThrough,
    };
  }
  rawDefs.set(fullName, def);
  return def;
}

/** Every method of every service in agent/api, services sorted by name, methods in declaration order. */
export function allMethods(): MethodInfo[] {
  return protoIndex().methods.map((m) => ({ ...m }));
}
