// Logs -k: a Kubernetes container's log file as the CRI containerd writes it (under /var/log/pods,
// CRI's `<time> <stream> <tag> <line>` format), sent as it is, as Talos's CRI inspector reads it:
// the last tail_lines lines (all when negative), then with follow what is appended.
import { promises as fs } from "node:fs";
import type * as grpc from "@grpc/grpc-js";
import { NotFoundError } from "../../errors.js";
import { LogFollower } from "../../services/containerd/log-follower.js";
import { criContainer } from "../../services/cri/inspector.js";
import type { CriClient } from "../../sys/cri/client.js";
import { cancellation, send } from "./stream.js";

export interface CriLogsRequest {
  id?: string;
  follow?: boolean;
  tail_lines?: number;
}

/** The last `n` lines of `text` (all when negative; a trailing newline ends a line, not starts one). */
export function tailLines(text: Buffer, n: number): Buffer {
  if (n < 0) return text;
  if (n === 0) return Buffer.alloc(0);
  let end = text.length;
  if (end > 0 && text[end - 1] === 0x0a) end--;
  let start = end;
  for (let seen = 0; start > 0; start--) {
    if (text[start - 1] === 0x0a && ++seen === n) break;
  }
  return text.subarray(start);
}

const chunkBytes = 64 * 1024;

export async function streamCriLogs(
  cri: CriClient,
  call: grpc.ServerWritableStream<CriLogsRequest, unknown>,
): Promise<void> {
  const req = call.request;
  const id = req.id ?? "";
  const container = await criContainer(cri, id);
  if (!container) throw new NotFoundError(`container ${JSON.stringify(id)} not found`, { id });
  if (!container.logPath) throw new NotFoundError("no log available", { id });
  const file = container.logPath;
  const text = await fs.readFile(file).catch((err: unknown) => {
    throw new NotFoundError(`open ${file}: no such file or directory`, { id, file }, { cause: err });
  });
  const { signal, dispose } = cancellation(call);
  const pending: Buffer[] = [];
  let wake: (() => void) | undefined;
  const follower = req.follow ? new LogFollower(file, (chunk) => (pending.push(chunk), wake?.())) : undefined;
  try {
    await follower?.start(text.length);
    const first = tailLines(text, req.tail_lines ?? 0);
    for (let i = 0; i < first.length; i += chunkBytes)
      if (!(await send(call, { bytes: first.subarray(i, i + chunkBytes) }))) return;
    while (follower && !signal.aborted) {
      if (pending.length === 0) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          signal.addEventListener("abort", () => resolve(), { once: true });
        });
        wake = undefined;
        continue;
      }
      if (!(await send(call, { bytes: Buffer.concat(pending.splice(0)) }))) return;
    }
  } finally {
    await follower?.stop();
    dispose();
  }
  if (!call.cancelled) call.end();
}
