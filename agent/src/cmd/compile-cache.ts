import { readdirSync, symlinkSync } from "node:fs";
import { getCompileCacheDir } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Links the compile cache baked at image build (scripts/compile-cache.sh) into the directory this process's
 * Node reads its cache from, before the command's modules load. Node names that directory after V8's
 * cachedDataVersionTag, which folds in the CPU's features, so a baked directory would be missed on any other
 * CPU; the entries carry no such tag (V8 checks its version, its flags and the source), so they fit every CPU.
 * Returns how many entries it linked: none without a cache directory (NODE_COMPILE_CACHE unset) or a baked
 * cache (tests, an image whose node could not run at build), or when they are there already (a restart).
 */
export function seedCompileCache(baked: URL): number {
  const dir = getCompileCacheDir();
  if (!dir) return 0;
  let names: string[];
  try {
    names = readdirSync(baked);
  } catch {
    return 0;
  }
  let linked = 0;
  for (const name of names) {
    try {
      symlinkSync(fileURLToPath(new URL(name, baked)), path.join(dir, name));
      linked++;
    } catch {
      // There already: this process's command started before on this boot.
    }
  }
  return linked;
}
