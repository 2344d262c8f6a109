// etcd's API subset (agent/etcd-api/*.proto), loaded once with protobufjs: snake_case fields as
// declared, enums as numbers, 64-bit integers as decimal strings (member IDs use all 64 bits, more
// than a JS number holds), bytes as Buffer.
import type * as grpc from "@grpc/grpc-js";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import { NotFoundError } from "../../errors.js";

const conversion: protobuf.IConversionOptions = { enums: Number, longs: String, bytes: Buffer, defaults: true };
const MARKER = "rpc.proto";

/** agent/etcd-api in the source tree (dist/ walks up to it), or etcd-api beside the bundle. */
function locate(): string {
  const fromEnv = process.env.BASALT_ETCD_PROTO_DIR;
  if (fromEnv) return path.resolve(fromEnv);
  const starts: string[] = [];
  try {
    if (import.meta.url) starts.push(path.dirname(fileURLToPath(import.meta.url)));
  } catch {
    // not a file: URL (a bundle loaded otherwise): argv below
  }
  if (process.argv[1]) starts.push(path.dirname(path.resolve(process.argv[1])));
  const searched: string[] = [];
  for (const start of starts) {
    for (let dir = start; ; dir = path.dirname(dir)) {
      for (const candidate of [path.join(dir, "agent", "etcd-api"), path.join(dir, "etcd-api")]) {
        searched.push(candidate);
        if (fs.existsSync(path.join(candidate, MARKER))) return candidate;
      }
      if (path.dirname(dir) === dir) break;
    }
  }
  throw new NotFoundError(`etcd API protos not found (set BASALT_ETCD_PROTO_DIR); looked in ${searched.join(", ")}`);
}

let root: protobuf.Root | undefined;

function etcdRoot(): protobuf.Root {
  if (root) return root;
  const dir = locate();
  const r = new protobuf.Root();
  r.resolvePath = (_origin, target) => (path.isAbsolute(target) ? target : path.join(dir, target));
  r.loadSync([path.join(dir, "kv.proto"), path.join(dir, "rpc.proto")], { keepCase: true });
  r.resolveAll();
  root = r;
  return r;
}

const defs = new Map<string, grpc.ServiceDefinition>();

/** grpc-js definition of etcd service `name` (KV, Cluster, Maintenance). */
export function etcdService(name: string): grpc.ServiceDefinition {
  const fullName = `etcdserverpb.${name}`;
  const cached = defs.get(fullName);
  if (cached) return cached;
  const svc = etcdRoot().lookup(fullName);
  if (!(svc instanceof protobuf.Service)) throw new NotFoundError(`unknown etcd service ${fullName}`);
  const def: Record<string, grpc.MethodDefinition<object, object>> = {};
  for (const m of svc.methodsArray) {
    m.resolve();
    const req = m.resolvedRequestType!;
    const res = m.resolvedResponseType!;
    def[m.name] = {
      path: `/${fullName}/${m.name}`,
      requestStream: !!m.requestStream,
      responseStream: !!m.responseStream,
      requestSerialize: (v: object) => Buffer.from(req.encode(req.fromObject(v as Record<string, unknown>)).finish()),
      requestDeserialize: (b: Buffer) => req.toObject(req.decode(b), conversion),
      responseSerialize: (v: object) => Buffer.from(res.encode(res.fromObject(v as Record<string, unknown>)).finish()),
      responseDeserialize: (b: Buffer) => res.toObject(res.decode(b), conversion),
    };
  }
  defs.set(fullName, def);
  return def;
}
