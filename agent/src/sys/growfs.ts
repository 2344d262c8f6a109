import { runTool } from "./exec.js";

/** Grows the xfs filesystem mounted at `target` to its device's size (nothing when it fills it already). */
export async function growXfs(target: string): Promise<void> {
  await runTool("xfs_growfs", ["-d", target]);
}
