// time.TimeService: Time asks the first configured time server (else Talos's default,
// time.cloudflare.com), TimeCheck the server named in the request; each answers with
// the node's clock and the server's after one SNTP exchange (talosctl prints both).

import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import type { ConfigBundle } from "../../config/bundle.js";
import { DEFAULT_TIME_SERVERS } from "../../controllers/network/defaults.js";
import { InvalidInputError, SystemError } from "../../errors.js";
import { unaryHandler, type ServiceImpl } from "../../grpc/server.js";
import { queryNtp } from "../../network/ntp/query.js";
import type { SystemClock } from "../../sys/clock.js";

export interface TimeApiContext {
  activeConfig(): ConfigBundle | undefined;
  /** The node's clock (the sandbox's fake one). */
  clock: Pick<SystemClock, "now">;
  /** NTP server port (tests move it off 123). */
  ntpPort?: number;
}

export class TimeQueryError extends SystemError {}

function timestamp(ms: number): { seconds: number; nanos: number } {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6)) };
}

async function check(ctx: TimeApiContext, server: string): Promise<Record<string, unknown>> {
  if (server === "") throw new InvalidInputError("no NTP server given");
  let address = server;
  try {
    if (isIP(server) === 0) address = (await lookup(server)).address;
    const m = await queryNtp(address, ctx.clock, ctx.ntpPort ? { port: ctx.ntpPort } : {});
    return { messages: [{ server, localtime: timestamp(ctx.clock.now()), remotetime: timestamp(m.serverTime) }] };
  } catch (err) {
    throw new TimeQueryError(`error querying NTP server ${JSON.stringify(server)}`, { server }, { cause: err });
  }
}

export function timeServiceImpl(ctx: TimeApiContext): ServiceImpl {
  return {
    Time: unaryHandler(async () => {
      const servers = ctx.activeConfig()?.v1alpha1()?.machine?.time?.servers ?? [];
      return check(ctx, servers[0] ?? DEFAULT_TIME_SERVERS[0]!);
    }),
    TimeCheck: unaryHandler(async (req: { server?: string }) => check(ctx, req.server ?? "")),
  };
}
