// containerd's API subset (agent/containerd-api/*.proto), loaded once with protobufjs. Same conversion
// convention as the node API's loader: snake_case fields, enums and 64-bit integers as numbers, bytes as Buffer.
import type * as grpc from "@grpc/grpc-js";
import fs from "node:fs";
import path from "node:path";
import protobuf from "protobufjs";
import { locateProtoDir } from "../proto-dir.js";
import { serviceDefinitionOf } from "../proto-service.js";
import { InvalidInputError, NotFoundError } from "../../errors.js";

const conversion: protobuf.IConversionOptions = { enums: Number, longs: Number, bytes: Buffer, defaults: true };
let root: protobuf.Root | undefined;

function containerdRoot(): protobuf.Root {
  if (root) return root;
  const dir = locateProtoDir("containerd-api", "tasks.proto", "BASALT_CONTAINERD_PROTO_DIR", "containerd API");
  const r = new protobuf.Root();
  r.resolvePath = (_origin, target) =>
    path.isAbsolute(target) || target.startsWith("google/") ? target : path.join(dir, target);
  r.loadSync(
    fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(".proto"))
      .sort()
      .map((f) => path.join(dir, f)),
    { keepCase: true },
  );
  r.resolveAll();
  root = r;
  return r;
}

function type(fullName: string): protobuf.Type {
  const t = containerdRoot().lookup(fullName);
  if (!(t instanceof protobuf.Type)) throw new NotFoundError(`unknown containerd message ${fullName}`);
  return t;
}

/** Encodes a plain object (snake_case keys) as containerd message `fullName`. */
export function encodeMessage(fullName: string, value: object): Buffer {
  const t = type(fullName);
  try {
    return Buffer.from(t.encode(t.fromObject(value as Record<string, unknown>)).finish());
  } catch (err) {
    throw new InvalidInputError(`cannot encode ${fullName}: ${(err as Error).message}`, {}, { cause: err });
  }
}

/** Decodes `bytes` as containerd message `fullName` into a plain object. */
export function decodeMessage<T>(fullName: string, bytes: Uint8Array): T {
  const t = type(fullName);
  // The plain object mirrors the message declared in agent/containerd-api; T names that shape.
  return t.toObject(t.decode(bytes), conversion) as T;
}

const defs = new Map<string, grpc.ServiceDefinition>();

/** grpc-js definition of containerd service `fullName` (e.g. `containerd.services.tasks.v1.Tasks`). */
export function containerdService(fullName: string): grpc.ServiceDefinition {
  const cached = defs.get(fullName);
  if (cached) return cached;
  const svc = containerdRoot().lookup(fullName);
  if (!(svc instanceof protobuf.Service)) throw new NotFoundError(`unknown containerd service ${fullName}`);
  const def = serviceDefinitionOf(svc, fullName, conversion);
  defs.set(fullName, def);
  return def;
}
