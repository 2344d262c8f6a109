// Image references as talosctl and containerd write them: [host[:port]/]repo[:tag][@digest].
// A name without a host is Docker Hub's (docker.io, "library/" for one-part names).

import { InvalidInputError } from "../errors.js";

export interface ImageReference {
  /** The registry as named in the reference (docker.io for Docker Hub). */
  host: string;
  repository: string;
  tag?: string;
  digest?: string;
}

const repoPart = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const tagRe = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const digestRe = /^sha256:[a-f0-9]{64}$/;

export function parseImageReference(ref: string): ImageReference {
  const bad = (why: string) => new InvalidInputError(`invalid image reference "${ref}": ${why}`, { reference: ref });
  let rest = ref.trim();
  if (rest === "") throw bad("empty");
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!digestRe.test(digest)) throw bad("the digest must be sha256:<64 hex digits>");
  }
  let host = "docker.io";
  const slash = rest.indexOf("/");
  const first = slash >= 0 ? rest.slice(0, slash) : "";
  // The first part is a host when it looks like one (a dot, a port or localhost), as Docker decides.
  if (slash >= 0 && (first.includes(".") || first.includes(":") || first === "localhost")) {
    host = first;
    rest = rest.slice(slash + 1);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(":");
  if (colon >= 0) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!tagRe.test(tag)) throw bad(`bad tag "${tag}"`);
  }
  if (rest === "" || !rest.split("/").every((p) => repoPart.test(p))) throw bad(`bad repository "${rest}"`);
  if (host === "docker.io" && !rest.includes("/")) rest = `library/${rest}`;
  if (!tag && !digest) tag = "latest";
  return { host, repository: rest, ...(tag ? { tag } : {}), ...(digest ? { digest } : {}) };
}

/** The manifest reference to fetch: the digest when pinned, else the tag. */
export function manifestReference(ref: ImageReference): string {
  return ref.digest ?? ref.tag ?? "latest";
}

export function formatImageReference(ref: ImageReference): string {
  return `${ref.host}/${ref.repository}${ref.tag ? `:${ref.tag}` : ""}${ref.digest ? `@${ref.digest}` : ""}`;
}
