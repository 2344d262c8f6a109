import * as grpc from "@grpc/grpc-js";
import { serviceDefinition } from "../api/index.js";
import { describeError, UnimplementedError } from "../errors.js";
import { logger } from "../log.js";
import { toGrpcError } from "./status.js";

const log = logger("grpc");

/** What every server-side call offers (grpc-js does not export its ServerSurfaceCall type). */
export type SurfaceCall = Pick<
  grpc.ServerUnaryCall<unknown, unknown>,
  "metadata" | "getPeer" | "getAuthContext" | "getPath" | "getDeadline" | "getHost" | "cancelled"
>;

/** Decides, before a handler runs, whether a call may proceed; throws one of our errors to refuse. */
export type CallGuard = (path: string, call: SurfaceCall) => void;

// Handlers are invoked generically; each implementation is typed where it is written.
// biome-ignore lint/suspicious/noExplicitAny: a handler's parameters are typed where it is written
export type AnyHandler = (...args: any[]) => unknown;
export type ServiceImpl = Record<string, AnyHandler>;

/** Binds `server` to `address` (host:port or unix:path); a failed bind leaves no half-made server behind. */
export async function bindServer(
  server: grpc.Server,
  address: string,
  credentials: grpc.ServerCredentials,
): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(address, credentials, (err) => (err ? reject(err) : resolve())),
    );
  } catch (err) {
    server.forceShutdown();
    throw err;
  }
}

/** Stops accepting at once; calls in flight get `drainMs` to finish, then their connections are cut. */
export async function drainAndClose(server: grpc.Server, drainMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, drainMs))),
  ]);
  clearTimeout(timer);
  server.forceShutdown();
}

function methodName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

function fail(call: unknown, callback: unknown, err: unknown): void {
  const status = toGrpcError(err);
  if (typeof callback === "function") (callback as (e: unknown) => void)(status);
  else (call as NodeJS.EventEmitter).emit("error", status);
}

/**
 * Registers a whole service: implemented methods run behind the guard with our
 * errors mapped to gRPC status; the rest answer UNIMPLEMENTED naming the method,
 * as a Go server embedding the generated Unimplemented server does.
 */
export function addService(server: grpc.Server, fullName: string, impl: ServiceImpl, guard: CallGuard): void {
  const def = serviceDefinition(fullName);
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const [name, method] of Object.entries(def)) {
    const path = method.path;
    const own = impl[name];
    handlers[name] = ((call: SurfaceCall, callback?: unknown) => {
      try {
        guard(path, call);
        if (!own) {
          throw new UnimplementedError(`method ${methodName(path)} not implemented`);
        }
        const result = own(call, callback);
        if (result instanceof Promise) result.catch((err: unknown) => fail(call, callback, err));
      } catch (err) {
        log.debug("call refused", { path, error: describeError(err) });
        fail(call, callback, err);
      }
    }) as grpc.UntypedHandleCall;
  }
  server.addService(def, handlers);
}

/** Wraps an async unary implementation into a grpc-js handler. */
export function unaryHandler<Req, Res>(
  fn: (req: Req, call: grpc.ServerUnaryCall<Req, Res>) => Promise<Res>,
): AnyHandler {
  return async (call: grpc.ServerUnaryCall<Req, Res>, callback: grpc.sendUnaryData<Res>) => {
    const res = await fn(call.request, call);
    callback(null, res);
  };
}
