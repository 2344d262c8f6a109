import { describeError } from "../errors.js";
import { logger } from "../log.js";

const log = logger("sequencer");

export interface Task {
  name: string;
  run(signal: AbortSignal): Promise<void>;
}
export interface Phase {
  name: string;
  tasks: Task[];
}

export type SequenceListener = (event: { sequence: string; phase?: string; task?: string; action: "start" | "stop"; error?: string }) => void;

function ms(start: bigint): string {
  return `${Number((process.hrtime.bigint() - start) / 1000n) / 1000}ms`;
}

/**
 * Runs an ordered list of phases, tasks of a phase concurrently, logging each
 * step with its timing the way Talos's console shows `task X (1/2): done`.
 */
export async function runSequence(name: string, phases: Phase[], signal: AbortSignal, listener?: SequenceListener): Promise<void> {
  const seqStart = process.hrtime.bigint();
  log.info(`${name} sequence: ${phases.length} phase(s)`);
  listener?.({ sequence: name, action: "start" });
  try {
    for (const [i, phase] of phases.entries()) {
      const phaseStart = process.hrtime.bigint();
      log.info(`phase ${phase.name} (${i + 1}/${phases.length}): ${phase.tasks.length} tasks(s)`);
      listener?.({ sequence: name, phase: phase.name, action: "start" });
      await Promise.all(
        phase.tasks.map(async (task, j) => {
          const taskStart = process.hrtime.bigint();
          const label = `task ${task.name} (${j + 1}/${phase.tasks.length})`;
          log.info(`${label}: starting`);
          listener?.({ sequence: name, phase: phase.name, task: task.name, action: "start" });
          try {
            await task.run(signal);
          } catch (err) {
            log.error(`${label}: failed`, { error: describeError(err) });
            listener?.({ sequence: name, phase: phase.name, task: task.name, action: "stop", error: describeError(err) });
            throw err;
          }
          log.info(`${label}: done, ${ms(taskStart)}`);
          listener?.({ sequence: name, phase: phase.name, task: task.name, action: "stop" });
        }),
      );
      log.info(`phase ${phase.name} (${i + 1}/${phases.length}): done, ${ms(phaseStart)}`);
      listener?.({ sequence: name, phase: phase.name, action: "stop" });
    }
  } catch (err) {
    log.error(`${name} sequence: failed`, { error: describeError(err) });
    listener?.({ sequence: name, action: "stop", error: describeError(err) });
    throw err;
  }
  log.info(`${name} sequence: done: ${ms(seqStart)}`);
  listener?.({ sequence: name, action: "stop" });
}
