// The node API schema: loads every agent/api/**/*.proto once with protobufjs and
// turns message and service names into codecs and grpc-js service definitions.
//
// One conversion convention everywhere (callers rely on it): snake_case field
// names exactly as in the protos, enums as numbers, 64-bit integers as numbers,
// bytes as Buffer, defaults filled in, oneof virtual fields present.
import type * as grpc from "@grpc/grpc-js";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { InvalidInputError, NotFoundError } from "../errors.js";

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
  toObject(this: protobuf.Type, message: protobuf.Message, options?: protobuf.IConversionOptions): { [k: string]: unknown } {
    return this.toObject(message, options);
  },
};
protobuf.wrappers[".google.protobuf.Timestamp"] = timestampWrapper;

let root: protobuf.Root | undefined;

/** Every message, enum and service of agent/api, loaded on first use and kept. */
export function apiRoot(): protobuf.Root {
  if (root) return root;
  if (!isProtoDir(protoDir)) {
    throw new NotFoundError(`API proto directory not found (set BASALT_PROTO_DIR); looked in ${located.searched.join(", ")}`, {
      protoDir,
    });
  }
  const r = new protobuf.Root();
  // Imports are written relative to the proto directory; google/protobuf/* come bundled with protobufjs.
  r.resolvePath = (_origin, target) => (path.isAbsolute(target) ? target : path.join(protoDir, target));
  r.loadSync(listProtos(protoDir), { keepCase: true });
  r.resolveAll();
  root = r;
  return r;
}

const typeCache = new Map<string, protobuf.Type>();

/** The message type `fullName` (e.g. `machine.VersionResponse`); NotFoundError when unknown. */
export function lookupMessage(fullName: string): protobuf.Type {
  let t = typeCache.get(fullName);
  if (t) return t;
  const found = apiRoot().lookup(fullName.replace(/^\./, ""));
  if (!(found instanceof protobuf.Type)) throw new NotFoundError(`unknown message type ${fullName}`, { type: fullName });
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
    throw new InvalidInputError(`cannot encode ${type.fullName.slice(1)}: ${(err as Error).message}`, {}, { cause: err });
  }
}

function decodeWith(type: protobuf.Type, bytes: Uint8Array): Record<string, unknown> {
  try {
    return type.toObject(type.decode(asBuffer(bytes)), conversionOptions);
  } catch (err) {
    throw new InvalidInputError(`cannot decode ${type.fullName.slice(1)}: ${(err as Error).message}`, {}, { cause: err });
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

function lookupService(fullName: string): protobuf.Service {
  const found = apiRoot().lookup(fullName.replace(/^\./, ""));
  if (!(found instanceof protobuf.Service)) throw new NotFoundError(`unknown service ${fullName}`, { service: fullName });
  return found;
}

function methodsOf(service: protobuf.Service): { method: protobuf.Method; req: protobuf.Type; res: protobuf.Type; path: string }[] {
  const name = service.fullName.slice(1);
  return service.methodsArray.map((method) => {
    method.resolve();
    return {
      method,
      req: method.resolvedRequestType as protobuf.Type,
      res: method.resolvedResponseType as protobuf.Type,
      path: `/${name}/${method.name}`,
    };
  });
}

const typedDefs = new Map<string, grpc.ServiceDefinition>();
const rawDefs = new Map<string, grpc.ServiceDefinition>();

/** grpc-js definition of service `fullName`, keyed by method name, plain objects in and out. */
export function serviceDefinition(fullName: string): grpc.ServiceDefinition {
  const cached = typedDefs.get(fullName);
  if (cached) return cached;
  const def: Record<string, grpc.MethodDefinition<object, Record<string, unknown>>> = {};
  for (const { method, req, res, path: p } of methodsOf(lookupService(fullName))) {
    def[method.name] = {
      path: p,
      requestStream: !!method.requestStream,
      responseStream: !!method.responseStream,
      requestSerialize: (value: object) => encodeWith(req, value),
      requestDeserialize: (bytes: Buffer) => decodeWith(req, bytes),
      responseSerialize: (value: object) => encodeWith(res, value),
      responseDeserialize: (bytes: Buffer) => decodeWith(res, bytes),
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
  for (const { method, path: p } of methodsOf(lookupService(fullName))) {
    def[method.name] = {
      path: p,
      requestStream: !!method.requestStream,
      responseStream: !!method.responseStream,
      requestSerialize: passThrough,
      requestDeserialize: passThrough,
      responseSerialize: passThrough,
      responseDeserialize: passThrough,
    };
  }
  rawDefs.set(fullName, def);
  return def;
}

function servicesIn(ns: protobuf.NamespaceBase): protobuf.Service[] {
  const out: protobuf.Service[] = [];
  for (const obj of ns.nestedArray) {
    if (obj instanceof protobuf.Service) out.push(obj);
    else if (obj instanceof protobuf.Namespace) out.push(...servicesIn(obj));
  }
  return out;
}

let methodList: MethodInfo[] | undefined;

/** Every method of every service in agent/api, services sorted by name, methods in declaration order. */
export function allMethods(): MethodInfo[] {
  if (!methodList) {
    const services = servicesIn(apiRoot()).sort((a, b) => a.fullName.localeCompare(b.fullName));
    methodList = services.flatMap((svc) =>
      methodsOf(svc).map(({ method, req, res, path: p }) => ({
        service: svc.fullName.slice(1),
        name: method.name,
        path: p,
        requestType: req.fullName.slice(1),
        responseType: res.fullName.slice(1),
        requestStream: !!method.requestStream,
        responseStream: !!method.responseStream,
      })),
    );
  }
  return methodList.map((m) => ({ ...m }));
}
