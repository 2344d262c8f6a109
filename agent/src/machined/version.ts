import os from "node:os";

// The API contract we speak is Talos v1.7.6's. talosctl warns when the server's tag
// sorts before its own by semver; a pre-release suffix would (1.7.6-x < 1.7.6), build
// metadata is ignored, so Basalt is named there.
export const productName = "Basalt";
export const basaltVersion = "0.1.0";
export const contractTag = `v1.7.6+basalt.${basaltVersion}`;

/** machine.VersionInfo */
export function versionInfo() {
  return {
    tag: contractTag,
    sha: process.env["BASALT_GIT_SHA"] ?? "unknown",
    built: process.env["BASALT_BUILT"] ?? "",
    go_version: `node ${process.version}`,
    os: "linux",
    arch: os.arch() === "x64" ? "amd64" : os.arch(),
  };
}

/** One machine.Version message: in maintenance mode Talos sends version + platform only (no features). */
export function versionMessage(
  platform: { name: string; mode: string },
  opts: { maintenance: boolean; rbac: boolean },
) {
  const msg: Record<string, unknown> = {
    version: versionInfo(),
    platform: { name: platform.name, mode: platform.mode },
  };
  if (!opts.maintenance) msg["features"] = { rbac: opts.rbac };
  return msg;
}
