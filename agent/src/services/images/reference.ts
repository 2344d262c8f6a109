import { InvalidInputError } from "../../errors.js";

/** An image reference in docker's normalized form: `docker.io/library/alpine:3.19`, `localhost:5000/hello@sha256:…`. */
export interface ImageReference {
  /** Registry host (with port), docker.io for a bare name. */
  domain: string;
  /** Repository path inside the registry, e.g. `library/alpine`. */
  path: string;
  tag?: string;
  digest?: string;
  /** The full normalized reference (the image's name in containerd). */
  name: string;
}

const pathComponent = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const tagRe = /^[\w][\w.-]{0,127}$/;
const digestRe = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$/;

/** Parses and normalizes a reference as docker (and containerd's client, which Talos uses) does. */
export function parseReference(ref: string): ImageReference {
  const bad = (why: string) => new InvalidInputError(`invalid image reference "${ref}": ${why}`, { reference: ref });
  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf("@");
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!digestRe.test(digest)) throw bad("bad digest");
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(":");
  if (colon > rest.lastIndexOf("/")) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!tagRe.test(tag)) throw bad("bad tag");
  }
  const slash = rest.indexOf("/");
  const first = slash < 0 ? "" : rest.slice(0, slash);
  let domain = "docker.io";
  let path = rest;
  if (first && (first.includes(".") || first.includes(":") || first === "localhost" || first !== first.toLowerCase())) {
    domain = first;
    path = rest.slice(slash + 1);
  }
  if (domain === "index.docker.io") domain = "docker.io";
  if (domain === "docker.io" && !path.includes("/")) path = `library/${path}`;
  if (path === "" || !path.split("/").every((c) => pathComponent.test(c))) throw bad("bad repository name");
  if (!tag && !digest) tag = "latest";
  const name = `${domain}/${path}${tag ? `:${tag}` : ""}${digest ? `@${digest}` : ""}`;
  return { domain, path, ...(tag ? { tag } : {}), ...(digest ? { digest } : {}), name };
}
