// MachineService.Logs (talosctl logs) for services: the service's log from machined's ring,
// the last tail_lines lines (all when negative; proto3's 0 sends none, as Talos), then with
// follow every new line until the client goes away. An id nothing wrote to answers Talos's
// `log "<id>" was not registered`. LogsContainers lists the registered ids.

import type * as grpc from "@grpc/grpc-js";
import type { ServiceLogs } from "../../services/logs.js";
import { criRuntime, type CriAccess } from "./containers.js";
import { streamCriLogs } from "./cri-logs.js";
import { cancellation, send } from "./stream.js";

export interface LogsRequest {
  namespace?: string;
  id?: string;
  driver?: number;
  follow?: boolean;
  tail_lines?: number;
}

/** Talos's containerd namespace of system services; `talosctl logs` asks for it unless -k. */
const systemNamespace = "system";
/** Lines are sent in messages of at most this many bytes (a line longer than that alone). */
const chunkBytes = 64 * 1024;

export async function streamLogs(
  logs: ServiceLogs,
  cri: CriAccess | undefined,
  call: grpc.ServerWritableStream<LogsRequest, unknown>,
): Promise<void> {
  const req = call.request;
  const id = req.id ?? "";
  // Any other namespace is a Kubernetes container's log (talosctl logs -k), read through the CRI.
  if ((req.namespace ?? "") !== systemNamespace && id !== "kubelet")
    return streamCriLogs(criRuntime(cri, req.namespace), call);
  const pending: Buffer[] = [];
  let wake: (() => void) | undefined;
  const { lines, stop } = logs.read(
    id,
    req.tail_lines ?? 0,
    req.follow
      ? (line) => {
          pending.push(line);
          wake?.();
        }
      : undefined,
  );
  const { signal, dispose } = cancellation(call);
  try {
    if (!(await sendLines(call, lines))) return;
    while (req.follow && !signal.aborted) {
      if (pending.length === 0) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          signal.addEventListener("abort", () => resolve(), { once: true });
        });
        wake = undefined;
        continue;
      }
      if (!(await sendLines(call, pending.splice(0)))) return;
    }
  } finally {
    stop();
    dispose();
  }
  if (!call.cancelled) call.end();
}

async function sendLines(call: grpc.ServerWritableStream<LogsRequest, unknown>, lines: Buffer[]): Promise<boolean> {
  for (let i = 0; i < lines.length; ) {
    const batch: Buffer[] = [];
    let size = 0;
    while (i < lines.length && (batch.length === 0 || size + lines[i]!.length <= chunkBytes)) {
      size += lines[i]!.length;
      batch.push(lines[i++]!);
    }
    if (!(await send(call, { bytes: Buffer.concat(batch) }))) return false;
  }
  return true;
}

/** machine.LogsContainersResponse: every registered log id. */
export function logsContainers(logs: ServiceLogs) {
  return { messages: [{ ids: logs.ids() }] };
}
