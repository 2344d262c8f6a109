// The kernel-log pane of the dashboard, as Talos's summary screen has it under the node's fields:
// a horizontal line, then the newest kernel messages (Dmesg's lines, as Talos's dashboard follows
// Dmesg), as many as fit, long ones wrapped; "..." until the first arrives. Talos keeps the last
// 1000 lines, and after a failed read shows the error and follows again 30 s later.

import { setTimeout as sleep } from "node:timers/promises";
import { describeError } from "../errors.js";

/** Talos's LogViewer keeps this many lines (components.maxLogLines). */
export const maxLogLines = 1000;
/** Talos's dashboard waits this long before following Dmesg again after it ended or failed. */
export const logRetryMs = 30_000;

/** The last `maxLogLines` lines of the pane, oldest first. */
export class LogLines {
  private readonly kept: string[] = [];

  /** Adds a message: trimmed as Talos trims it; its own lines (a record's KEY=value lines) stay lines. */
  push(message: string): void {
    const text = message.trim();
    if (text === "") return;
    this.kept.push(...text.split("\n"));
    if (this.kept.length > maxLogLines) this.kept.splice(0, this.kept.length - maxLogLines);
  }

  lines(): readonly string[] {
    return this.kept;
  }
}

/** The terminal's rows for `line`: control characters shown as spaces (a VT would act on them), cut every `width` columns. */
function wrap(line: string, width: number): string[] {
  const chars = Array.from(line.replace(/[\x00-\x1f\x7f]/g, " "));
  if (chars.length === 0) return [""];
  const rows: string[] = [];
  for (let i = 0; i < chars.length; i += width) rows.push(chars.slice(i, i + width).join(""));
  return rows;
}

/** The pane's `height` rows at most: the line, then the newest rows of `lines` that fit. */
export function renderLogPane(lines: readonly string[], width: number, height: number): string[] {
  const rule = "\u2500".repeat(width);
  if (lines.length === 0) return [rule, "..."];
  const room = height - 1;
  const rows: string[] = [];
  // Newest first until the pane is full: only the lines that can show are wrapped.
  for (let i = lines.length - 1; i >= 0 && rows.length < room; i--) rows.unshift(...wrap(lines[i]!, width));
  return [rule, ...rows.slice(Math.max(0, rows.length - room))];
}

/** The summary, then the pane in the rows left below it; no pane when fewer than two rows are left. */
export function composeScreen(summary: string, lines: readonly string[], size: { rows: number; cols: number }): string {
  const top = summary.endsWith("\n") ? summary.slice(0, -1).split("\n") : summary.split("\n");
  const height = size.rows - top.length;
  // No newline after the last row: one on the screen's last row would scroll the summary up.
  return height < 2 ? top.join("\n") : [...top, ...renderLogPane(lines, size.cols, height)].join("\n");
}

/**
 * Follows the kernel log into `into` until `signal` aborts, calling `changed` after each message;
 * when the log ends or fails, the error becomes a line and it is followed again after `retryMs`.
 */
export async function followKernelLog(
  source: (signal: AbortSignal) => AsyncIterable<string>,
  into: LogLines,
  changed: () => void,
  signal: AbortSignal,
  retryMs = logRetryMs,
): Promise<void> {
  while (!signal.aborted) {
    try {
      for await (const line of source(signal)) {
        into.push(line);
        changed();
      }
    } catch (err) {
      if (signal.aborted) return;
      into.push(`error reading dmesg stream: ${describeError(err)}`);
      changed();
    }
    await sleep(retryMs, undefined, { signal }).catch(() => undefined);
  }
}
