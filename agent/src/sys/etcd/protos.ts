// etcd's API subset (agent/etcd-api/*.proto), loaded once with protobufjs: snake_case fields as
// declared, enums as numbers, 64-bit integers as decimal strings (member IDs use all 64 bits, more
// than a JS number holds), bytes as Buffer.
import type * as grpc from "@grpc/grpc-js";
import path from "node:path";
import protobuf from "protobufjs";
import { locateProtoDir } from "../proto-dir.js";
import { serviceDefinitionOf } from "../proto-service.js";
import { NotFoundError } from "../../errors.js";

const conversion: protobuf.IConversionOptions = { enums: Number, longs: String, bytes: Buffer, defaults: true };
let root: protobuf.Root | undefined;

function etcdRoot(): protobuf.Root {
  if (root) return root;
  const dir = locateProtoDir("etcd-api", "rpc.proto", "BASALT_ETCD_PROTO_DIR", "etcd API");
  const r = new protobuf.Root();
  r.resolvePath = (_origin, target) => (path.isAbsolute(target) ? target : path.join(dir, target));
  r.loadSync([path.join(dir, "kv.proto"), path.join(dir, "rpc.proto")], { keepCase: true });
  r.resolveAll();
  root = r;
  return r;
}

const defs = new Map<string, grpc.ServiceDefinition>();

/** grpc-js definition of etcd service `name` (KV, Watch, Lease, Cluster, Maintenance). */
export function etcdService(name: string): grpc.ServiceDefinition {
  const fullName = `etcdserverpb.${name}`;
  const cached = defs.get(fullName);
  if (cached) return cached;
  const svc = etcdRoot().lookup(fullName);
  if (!(svc instanceof protobuf.Service)) throw new NotFoundError(`unknown etcd service ${fullName}`);
  const def = serviceDefinitionOf(svc, fullName, conversion);
  defs.set(fullName, def);
  return def;
}
