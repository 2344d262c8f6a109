// A grpc-js service definition from a protobufjs service: messages encoded from and decoded to plain objects.
import type * as grpc from "@grpc/grpc-js";
import type protobuf from "protobufjs";

/** Every method of `svc` under `/<fullName>/<method>`, decoded with `conversion`. */
export function serviceDefinitionOf(
  svc: protobuf.Service,
  fullName: string,
  conversion: protobuf.IConversionOptions,
): grpc.ServiceDefinition {
  const def: Record<string, grpc.MethodDefinition<object, object>> = {};
  for (const m of svc.methodsArray) {
    m.resolve();
    const req = m.resolvedRequestType!;
    const res = m.resolvedResponseType!;
    def[m.name] = {
      path: `/${fullName}/${m.name}`,
      requestStream: !!m.requestStream,
      responseStream: !!m.responseStream,
      // fromObject takes any plain object; grpc-js hands the caller's request through as `object`.
      requestSerialize: (v: object) => Buffer.from(req.encode(req.fromObject(v as Record<string, unknown>)).finish()),
      requestDeserialize: (b: Buffer) => req.toObject(req.decode(b), conversion),
      responseSerialize: (v: object) => Buffer.from(res.encode(res.fromObject(v as Record<string, unknown>)).finish()),
      responseDeserialize: (b: Buffer) => res.toObject(res.decode(b), conversion),
    };
  }
  return def;
}
