import { InvalidInputError } from "../../errors.js";

export interface ClusterEndpoint {
  /** The endpoint as it goes into `cluster.controlPlane.endpoint`. */
  url: string;
  /** Host part (IPv6 without brackets), added to the API server's certSANs. */
  host: string;
  port: number;
}

/** The control-plane endpoint must be an `https://` URL with an explicit port. */
export function parseClusterEndpoint(endpoint: string): ClusterEndpoint {
  const hint = "expected an https:// URL with a port, e.g. https://10.5.0.2:6443";
  const text = endpoint.trim();
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InvalidInputError(`invalid cluster endpoint ${JSON.stringify(endpoint)}: ${hint}`);
  }
  if (url.protocol !== "https:") {
    throw new InvalidInputError(`invalid cluster endpoint ${JSON.stringify(endpoint)}: scheme must be https; ${hint}`);
  }
  // URL drops the default port 443, so look for it in the text as well.
  const explicitPort = url.port !== "" ? url.port : /^https:\/\/(\[[^\]]*\]|[^/:?#]*):(\d+)/i.exec(text)?.[2];
  if (!explicitPort) {
    throw new InvalidInputError(`invalid cluster endpoint ${JSON.stringify(endpoint)}: port is missing; ${hint}`);
  }
  if (url.hostname === "")
    throw new InvalidInputError(`invalid cluster endpoint ${JSON.stringify(endpoint)}: host is missing`);
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  return { url: text, host, port: Number(explicitPort) };
}
