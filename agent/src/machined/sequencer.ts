import { BasaltError, describeError } from "../errors.js";
import { logger } from "../log.js";

const log = logger("sequencer");

/** A running sequence stopped because another one took over. */
export class SequenceAbortedError extends BasaltError {}

export interface Task {
  name: string;
  run(signal: AbortSignal): Promise<void>;
}
export interface Phase {
  name: string;
  tasks: Task[];
}

export type SequenceListener = (event: {
  sequence: string;
  phase?: string;
  task?: string;
  action: "start" | "stop";
  error?: string;
}) => void;

function elapsedMs(start: bigint): number {
  return Number((process.hrtime.bigint() - start) / 1000n) / 1000;
}

/**
 * Runs an ordered list of phases, tasks of a phase concurrently, logging each
 * step with its timing the way Talos's console shows `task X (1/2): done`.
 * The message keeps that console wording; the same facts are fields for machines.
 */
export async function runSequence(
  name: string,
  phases: Phase[],
  signal: AbortSignal,
  listener?: SequenceListener,
): Promise<void> {
  const seqStart = process.hrtime.bigint();
  const seqLog = log.child({ sequence: name });
  seqLog.info(`${name} sequence: ${phases.length} phase(s)`, { phases: phases.length });
  listener?.({ sequence: name, action: "start" });
  try {
    for (const [i, phase] of phases.entries()) {
      // Another sequence took over (a reboot during boot): stop before the next phase.
      if (signal.aborted)
        throw new SequenceAbortedError(`${name} sequence was taken over`, { sequence: name, phase: phase.name });
      const phaseStart = process.hrtime.bigint();
      const phaseLog = seqLog.child({ phase: phase.name });
      const phaseLabel = `phase ${phase.name} (${i + 1}/${phases.length})`;
      phaseLog.info(`${phaseLabel}: ${phase.tasks.length} task(s)`, { tasks: phase.tasks.length });
      listener?.({ sequence: name, phase: phase.name, action: "start" });
      await Promise.all(
        phase.tasks.map(async (task, j) => {
          const taskStart = process.hrtime.bigint();
          const taskLog = phaseLog.child({ task: task.name });
          const label = `task ${task.name} (${j + 1}/${phase.tasks.length})`;
          taskLog.info(`${label}: starting`);
          listener?.({ sequence: name, phase: phase.name, task: task.name, action: "start" });
          try {
            await task.run(signal);
          } catch (err) {
            taskLog.error(`${label}: failed`, { error: describeError(err) });
            listener?.({
              sequence: name,
              phase: phase.name,
              task: task.name,
              action: "stop",
              error: describeError(err),
            });
            throw err;
          }
          const ms = elapsedMs(taskStart);
          taskLog.info(`${label}: done, ${ms}ms`, { durationMs: ms });
          listener?.({ sequence: name, phase: phase.name, task: task.name, action: "stop" });
        }),
      );
      const ms = elapsedMs(phaseStart);
      phaseLog.info(`${phaseLabel}: done, ${ms}ms`, { durationMs: ms });
      listener?.({ sequence: name, phase: phase.name, action: "stop" });
    }
  } catch (err) {
    seqLog.error(`${name} sequence: failed`, { error: describeError(err) });
    listener?.({ sequence: name, action: "stop", error: describeError(err) });
    throw err;
  }
  const ms = elapsedMs(seqStart);
  seqLog.info(`${name} sequence: done: ${ms}ms`, { durationMs: ms });
  listener?.({ sequence: name, action: "stop" });
}
