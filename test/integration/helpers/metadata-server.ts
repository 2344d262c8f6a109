// A cloud metadata service for the integration tests, serving each platform's protocol as its
// documentation describes it (AWS IMDSv2 with session tokens required, GCE's Metadata-Flavor
// header, ...) from the instance documents under test/fixtures/platforms. Run on
// 169.254.169.254:80 inside a network namespace of its own:
//
//   node metadata-server.js --listen 169.254.169.254:80 [--listen 168.63.129.16:80]
//     [--tls-listen 169.254.169.254:443 --tls-cert FILE --tls-key FILE] --scenario FILE
//
// The scenario (JSON, read again on every request, so a test can change it between boots) names
// the platform, the user data (absent: the instance has none) and an optional fault. Each request
// is printed on stdout as a JSON line {method, host, url, headers, body}; "listening" once it listens.

import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { prefixFrom } from "../../../agent/src/network/platform-config.js";

export interface Scenario {
  platform: string;
  /** The instance's user data; absent: none (404). */
  userData?: string;
  /** Azure: the IMDS api-versions served (default: all); any other is answered 400. */
  apiVersions?: string[];
  /**
   * Every metadata request (not AWS's token API) answers this status (with `body`), or never;
   * `body` alone is served in place of every JSON or YAML document (malformed metadata).
   */
  fault?: { status?: number; body?: string; hang?: boolean };
  /** Equinix Metal: the status its events endpoint (POST /events) answers; default 200. */
  eventStatus?: number;
  /** DigitalOcean, Vultr, Akamai: the first public IPv4 in place of the fixture's (a QEMU user network's guest address). */
  publicIPv4?: { address: string; netmask: string; gateway: string };
}

export const fixturesRoot = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../../test/fixtures/platforms",
);

/** A request as the service sees it (header names in lower case; the URL's host is the one asked). */
export interface Request {
  method: string;
  url: URL;
  headers: Record<string, string | undefined>;
  body: string;
  /** The TCP port the request came from. */
  sourcePort: number;
}

export interface Answer {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

type Handler = (req: Request, s: Scenario) => Answer;

const text = (body: string, status = 200): Answer => ({ status, body, headers: { "content-type": "text/plain" } });
const json = (value: unknown, status = 200): Answer => ({
  status,
  body: JSON.stringify(value),
  headers: { "content-type": "application/json" },
});
const notFound = (): Answer => text("Not Found", 404);
const fixture = (platform: string, file: string) => readFileSync(path.join(fixturesRoot, platform, file), "utf8");

// --- AWS IMDS: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-instance-metadata-service.html
// IMDSv2 required: a PUT to /latest/api/token with a TTL of 1..21600 s gives a token; every other
// request must carry it in X-aws-ec2-metadata-token, or it is refused with 401.
const awsTokens = new Set<string>();
const aws: Handler = (req, s) => {
  if (req.url.pathname === "/latest/api/token") {
    if (req.method !== "PUT") return text("", 405);
    const ttl = Number(req.headers["x-aws-ec2-metadata-token-ttl-seconds"]);
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > 21600) return text("", 400);
    const token = `token-${awsTokens.size + 1}`;
    awsTokens.add(token);
    return { status: 200, body: token, headers: { "x-aws-ec2-metadata-token-ttl-seconds": String(ttl) } };
  }
  if (req.method !== "GET") return text("", 405);
  if (!awsTokens.has(req.headers["x-aws-ec2-metadata-token"] ?? "")) return text("", 401);
  if (req.url.pathname === "/latest/user-data") return s.userData === undefined ? notFound() : text(s.userData);
  const key = req.url.pathname.replace(/^\/latest\/meta-data\//, "");
  const value = (JSON.parse(fixture("aws", "meta-data.json")) as Record<string, string>)[key];
  return value === undefined ? notFound() : text(value);
};

// --- GCE: https://cloud.google.com/compute/docs/metadata/querying-metadata
// Every request carries `Metadata-Flavor: Google` (else 403) and every answer does too. Paths
// name entries in kebab-case; `?recursive=true` lists a directory as JSON with camelCase keys.
const camel = (segment: string) => segment.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
const gcp: Handler = (req, s) => {
  const flavored = (a: Answer): Answer => ({ ...a, headers: { ...a.headers, "metadata-flavor": "Google" } });
  if (req.headers["metadata-flavor"] !== "Google") return text("Missing Metadata-Flavor:Google header.", 403);
  const rest = req.url.pathname.replace(/^\/computeMetadata\/v1\//, "");
  if (rest === "instance/attributes/user-data")
    return flavored(s.userData === undefined ? notFound() : text(s.userData));
  let node: unknown = JSON.parse(fixture("gcp", "metadata.json"));
  for (const segment of rest.split("/").filter((x) => x !== "")) {
    node = typeof node === "object" && node !== null ? (node as Record<string, unknown>)[camel(segment)] : undefined;
  }
  if (node === undefined || node === null) return flavored(notFound());
  if (typeof node === "object")
    return flavored(req.url.searchParams.get("recursive") === "true" ? json(node) : text(Object.keys(node).join("\n")));
  return flavored(text(String(node)));
};

// --- OpenStack metadata service: https://docs.openstack.org/nova/latest/user/metadata.html
// The config drive's documents under /openstack/latest/, and the EC2-compatible keys under /latest/meta-data/.
const openstack: Handler = (req, s) => {
  const p = req.url.pathname;
  if (p === "/openstack/latest/user_data") return s.userData === undefined ? notFound() : text(s.userData);
  if (p === "/openstack/latest/meta_data.json") return json(JSON.parse(fixture("openstack", "meta_data.json")));
  if (p === "/openstack/latest/network_data.json") return json(JSON.parse(fixture("openstack", "network_data.json")));
  const key = p.replace(/^\/latest\/meta-data\//, "");
  const value = (JSON.parse(fixture("openstack", "ec2-meta-data.json")) as Record<string, string>)[key];
  return value === undefined ? notFound() : text(value);
};

// --- DigitalOcean: https://docs.digitalocean.com/reference/api/metadata-api/
const digitalOcean: Handler = (req, s) => {
  const p = req.url.pathname;
  if (p === "/metadata/v1/user-data") return s.userData === undefined ? notFound() : text(s.userData);
  const doc = JSON.parse(fixture("digital-ocean", "v1.json")) as {
    interfaces: { public: { ipv4: { ip_address: string; netmask?: string; gateway?: string } }[] };
  };
  if (s.publicIPv4) {
    const { address, netmask, gateway } = s.publicIPv4;
    doc.interfaces.public[0]!.ipv4 = { ip_address: address, netmask, gateway };
  }
  if (p === "/metadata/v1.json") return json(doc);
  if (p === "/metadata/v1/interfaces/public/0/ipv4/address") return text(doc.interfaces.public[0]!.ipv4.ip_address);
  return notFound();
};

// --- Hetzner Cloud: https://docs.hetzner.cloud/#server-metadata
// Each key under /hetzner/v1/metadata/, network-config there as cloud-init YAML, user data at /hetzner/v1/userdata.
const hcloud: Handler = (req, s) => {
  const p = req.url.pathname;
  if (p === "/hetzner/v1/userdata") return s.userData === undefined ? notFound() : text(s.userData);
  if (p === "/hetzner/v1/metadata/network-config")
    return {
      status: 200,
      body: fixture("hcloud", "network-config.yaml"),
      headers: { "content-type": "application/yaml" },
    };
  if (p === "/hetzner/v1/metadata") return text(fixture("hcloud", "metadata.yaml"));
  const value = (parseYaml(fixture("hcloud", "metadata.yaml")) as Record<string, unknown>)[
    p.replace(/^\/hetzner\/v1\/metadata\//, "")
  ];
  return value === undefined ? notFound() : text(String(value));
};

// --- Vultr: https://www.vultr.com/metadata/
const vultr: Handler = (req, s) => {
  const p = req.url.pathname;
  if (p === "/latest/user-data") return s.userData === undefined ? notFound() : text(s.userData);
  if (p !== "/v1.json") return notFound();
  const doc = JSON.parse(fixture("vultr", "v1.json")) as { interfaces: { ipv4: Record<string, unknown> }[] };
  if (s.publicIPv4) doc.interfaces[0]!.ipv4 = { ...doc.interfaces[0]!.ipv4, ...s.publicIPv4 };
  return json(doc);
};

// --- Azure IMDS: https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service
// `Metadata: true` on every request (else 400), an api-version it serves (else 400).
// The wire server (168.63.129.16): https://learn.microsoft.com/azure/virtual-machines/linux/no-agent
// the goal state, then the health report a provisioned VM posts.
const azureVersions = ["2019-06-01", "2020-09-01", "2021-02-01", "2021-12-13"];
const azure: Handler = (req, s) => {
  if (req.url.hostname === "168.63.129.16") {
    if (req.headers["x-ms-version"] !== "2015-04-05") return text("missing x-ms-version", 400);
    const comp = req.url.searchParams.get("comp");
    if (req.url.pathname === "/machine/" && comp === "goalstate" && req.method === "GET")
      return {
        status: 200,
        body: fixture("azure", "goalstate.xml"),
        headers: { "content-type": "text/xml; charset=utf-8" },
      };
    if (req.url.pathname === "/machine/" && comp === "health" && req.method === "POST") return text("");
    return notFound();
  }
  if (req.headers["metadata"] !== "true")
    return json({ error: "Bad request. Required metadata header not specified" }, 400);
  const version = req.url.searchParams.get("api-version") ?? "";
  if (!(s.apiVersions ?? azureVersions).includes(version))
    return json(
      { error: "Bad request. api-version is invalid", "newest-versions": s.apiVersions ?? azureVersions },
      400,
    );
  const file = {
    "/metadata/instance/compute": "compute.json",
    "/metadata/instance/network/interface": "interfaces.json",
    "/metadata/loadbalancer": "loadbalancer.json",
  }[req.url.pathname];
  return file ? json(JSON.parse(fixture("azure", file))) : notFound();
};

// --- Oracle Cloud IMDS v2: https://docs.oracle.com/iaas/Content/Compute/Tasks/gettingmetadata.htm
// `Authorization: Bearer Oracle` on every request (else 401); the user data is base64 in the instance's metadata.
const oracle: Handler = (req, s) => {
  if (req.headers["authorization"] !== "Bearer Oracle") return text("Unauthorized", 401);
  const p = req.url.pathname;
  if (p === "/opc/v2/instance/metadata/user_data")
    return s.userData === undefined ? notFound() : text(Buffer.from(s.userData).toString("base64"));
  if (p === "/opc/v2/instance/") {
    const instance = JSON.parse(fixture("oracle", "instance.json")) as { metadata: Record<string, string> };
    if (s.userData !== undefined) instance.metadata["user_data"] = Buffer.from(s.userData).toString("base64");
    return json(instance);
  }
  if (p === "/opc/v2/vnics/") return json(JSON.parse(fixture("oracle", "vnics.json")));
  return notFound();
};

// --- Scaleway: https://www.scaleway.com/en/docs/compute/instances/how-to/use-cloud-init/ and the
// instance metadata API on 169.254.42.42: /conf?format=json; the user data's keys under
// /user_data/, answered only to a privileged source port (below 1024), else 403.
const scaleway: Handler = (req, s) => {
  const p = req.url.pathname;
  if (p === "/conf" && req.url.searchParams.get("format") === "json")
    return json(JSON.parse(fixture("scaleway", "conf.json")));
  if (p.startsWith("/user_data")) {
    if (req.sourcePort >= 1024) return text("Forbidden: the source port must be below 1024", 403);
    if (p === "/user_data/cloud-init") return s.userData === undefined ? notFound() : text(s.userData);
  }
  return notFound();
};

// --- UpCloud: https://upcloud.com/docs/products/cloud-servers/features/metadata-service/
const upcloud: Handler = (req, s) => {
  const p = req.url.pathname;
  if (p === "/metadata/v1/user_data") return s.userData === undefined ? notFound() : text(s.userData);
  if (p === "/metadata/v1.json") return json(JSON.parse(fixture("upcloud", "v1.json")));
  return notFound();
};

// --- Exoscale: https://community.exoscale.com/documentation/compute/cloud-init/ (the
// CloudStack-style keys under /1.0/meta-data/, user data at /1.0/user-data).
const exoscale: Handler = (req, s) => {
  const p = req.url.pathname;
  if (p === "/1.0/user-data") return s.userData === undefined ? notFound() : text(s.userData);
  const value = (JSON.parse(fixture("exoscale", "meta-data.json")) as Record<string, string>)[
    p.replace(/^\/1\.0\/meta-data\//, "")
  ];
  return value === undefined ? notFound() : text(value);
};

// --- Akamai (Linode): https://techdocs.akamai.com/cloud-computing/docs/overview-of-the-metadata-service
// PUT /v1/token with Metadata-Token-Expiry-Seconds (1..86400) gives a token (a JSON list when
// asked for JSON); every other request carries it in Metadata-Token, or is refused with 401.
// The user data is served base64.
const akamaiTokens = new Set<string>();
const akamai: Handler = (req, s) => {
  const p = req.url.pathname;
  if (p === "/v1/token") {
    if (req.method !== "PUT") return text("", 405);
    const ttl = Number(req.headers["metadata-token-expiry-seconds"]);
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > 86400) return text("", 400);
    const token = `linode-token-${akamaiTokens.size + 1}`;
    akamaiTokens.add(token);
    return req.headers["accept"] === "application/json" ? json([token]) : text(token);
  }
  if (!akamaiTokens.has(req.headers["metadata-token"] ?? ""))
    return json({ errors: [{ reason: "Unauthorized" }] }, 401);
  if (p === "/v1/user-data")
    return s.userData === undefined ? notFound() : text(Buffer.from(s.userData).toString("base64"));
  if (p === "/v1/instance") return json(JSON.parse(fixture("akamai", "instance.json")));
  if (p !== "/v1/network") return notFound();
  const network = JSON.parse(fixture("akamai", "network.json")) as { ipv4: { public: string[] } };
  if (s.publicIPv4) {
    const { address, netmask } = s.publicIPv4;
    network.ipv4.public[0] = `${address}/${prefixFrom(address, netmask, "publicIPv4").bits}`;
  }
  return json(network);
};

// --- Equinix Metal: https://deploy.equinix.com/developers/docs/metal/server-metadata/metadata/
// Over HTTPS at metadata.platformequinix.com: /metadata (JSON), /userdata. The events endpoint
// (the metadata's user_state_url) is served here too: POST /events.
const equinixMetal: Handler = (req, s) => {
  const p = req.url.pathname;
  if (p === "/events") return req.method === "POST" ? text("", s.eventStatus ?? 200) : text("", 405);
  if (p === "/userdata") return s.userData === undefined ? notFound() : text(s.userData);
  if (p === "/metadata") {
    const doc = JSON.parse(fixture("equinix-metal", "metadata.json")) as Record<string, unknown>;
    return json({ ...doc, user_state_url: `${req.url.protocol}//${req.url.host}/events` });
  }
  return notFound();
};

const handlers: Record<string, Handler> = {
  aws,
  gcp,
  openstack,
  "digital-ocean": digitalOcean,
  hcloud,
  vultr,
  azure,
  oracle,
  scaleway,
  upcloud,
  exoscale,
  akamai,
  equinixMetal,
};

/** The service's answer to one request; "hang" for none at all. */
export function answer(s: Scenario, req: Request): Answer | "hang" {
  const tokenApi = req.url.pathname === "/latest/api/token";
  if (s.fault && !tokenApi) {
    if (s.fault.hang) return "hang";
    if (s.fault.status !== undefined) return text(s.fault.body ?? "fault", s.fault.status);
  }
  const handler = handlers[s.platform];
  const a = handler ? handler(req, s) : text(`no platform ${s.platform}`, 500);
  // A fault body alone replaces every JSON or YAML document served (malformed metadata).
  if (
    s.fault?.body !== undefined &&
    a.status === 200 &&
    ["application/json", "application/yaml"].includes(a.headers?.["content-type"] ?? "")
  )
    return { ...a, body: s.fault.body };
  return a;
}

/** The request listener, reading the scenario from `scenarioFile` on each request. */
export function metadataHandler(scenarioFile: string, onRequest: (line: string) => void): http.RequestListener {
  return (req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const headers = Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(",") : v]),
      );
      const request: Request = {
        method: req.method ?? "GET",
        url: new URL(req.url ?? "/", `http://${req.headers.host ?? "169.254.169.254"}`),
        headers,
        body,
        sourcePort: req.socket.remotePort ?? 0,
      };
      onRequest(
        JSON.stringify({
          method: request.method,
          host: request.url.hostname,
          url: req.url,
          sourcePort: request.sourcePort,
          headers,
          ...(body ? { body } : {}),
        }),
      );
      const a = answer(JSON.parse(readFileSync(scenarioFile, "utf8")) as Scenario, request);
      if (a === "hang") return;
      res.writeHead(a.status, a.headers ?? {});
      res.end(a.body);
    });
  };
}

function main(argv: string[]): void {
  const all = (flag: string) => argv.flatMap((a, i) => (a === flag && argv[i + 1] ? [argv[i + 1]!] : []));
  const one = (flag: string) => all(flag)[0];
  const listens = all("--listen");
  const tlsListens = all("--tls-listen");
  const scenario = one("--scenario");
  const cert = one("--tls-cert");
  const key = one("--tls-key");
  if (listens.length === 0 || !scenario || (tlsListens.length > 0 && !(cert && key)))
    throw new Error(
      "usage: metadata-server --listen HOST:PORT [--listen ...] [--tls-listen HOST:PORT --tls-cert FILE --tls-key FILE] --scenario FILE",
    );
  const handler = metadataHandler(scenario, (line) => process.stdout.write(`${line}\n`));
  const listen = (server: http.Server, address: string) => {
    const colon = address.lastIndexOf(":");
    return server.listen(Number(address.slice(colon + 1)), address.slice(0, colon));
  };
  const servers = [
    ...listens.map((address) => listen(http.createServer(handler), address)),
    // Equinix Metal's service is HTTPS only.
    ...tlsListens.map((address) =>
      listen(https.createServer({ cert: readFileSync(cert!), key: readFileSync(key!) }, handler), address),
    ),
  ];
  void Promise.all(servers.map((srv) => new Promise((resolve) => srv.once("listening", resolve)))).then(() =>
    process.stdout.write("listening\n"),
  );
  process.on("SIGTERM", () => {
    for (const srv of servers) srv.close();
    process.exit(0);
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
