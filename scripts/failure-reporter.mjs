// A node --test reporter that writes only the failed tests, each with the first lines of its error.
// scripts/e2e.sh prints what it wrote after every lane ends: CI keeps the end of the output, where the
// lanes' TAP, hundreds of lines each, would have scrolled the reason away.

/** Lines of an error kept: its summary comes first (test/e2e/qemu.ts's waits put the console after it). */
const LINES = 6;

export default async function* failureReporter(source) {
  for await (const event of source) {
    if (event.type !== "test:fail") continue;
    const error = event.data.details.error;
    // A parent fails because a subtest did; the subtest's own failure says why.
    if (error?.failureType === "subtestsFailed") continue;
    const cause = error?.cause ?? error;
    const message = String(cause instanceof Error ? cause.message : cause).split("\n");
    const shown = message.slice(0, LINES).map((l) => `    ${l.slice(0, 400)}`);
    if (message.length > LINES) shown.push(`    ... (${message.length - LINES} more lines in the lane's output above)`);
    yield `  not ok: ${event.data.name}\n${shown.join("\n")}\n`;
  }
}
