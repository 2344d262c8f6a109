// Where the platform's network settings are kept between boots, as Talos keeps them.

import { readFile } from "node:fs/promises";
import path from "node:path";
import type { PlatformNetworkCache } from "../controllers/runtime/platform-network.js";
import { writeFileAtomic } from "../sys/atomic-file.js";
import type { Paths } from "../sys/paths.js";

/** Talos's platform-network.yaml under STATE (the sandbox's state directory in a container). */
export function platformNetworkCache(paths: Paths, container: boolean): PlatformNetworkCache {
  const file = path.join(paths.state, "platform-network.yaml");
  return {
    alwaysMounted: container,
    read: () =>
      readFile(file, "utf8").catch((err: unknown) => {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw err;
      }),
    write: (text) => writeFileAtomic(file, text, 0o400),
  };
}
