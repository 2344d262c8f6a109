// Placeholder: the proto loader is being written (see the protos work item).
// Contract other modules rely on:
//   apiRoot(): protobuf.Root                       all of agent/api/**/*.proto, loaded once
//   protoDir: string                               absolute path of agent/api
//   serviceDefinition(fullName): grpc.ServiceDefinition       typed (protobufjs encode/decode, plain objects)
//   rawServiceDefinition(fullName): grpc.ServiceDefinition    identity serializers (Buffer in/out), for proxying
//   allMethods(): MethodInfo[]                     every method of every service we know
export {};
