// A cloud metadata service for the integration tests, serving each platform's protocol as its
// documentation describes it (AWS IMDSv2 with session tokens required, GCE's Metadata-Flavor
// header, ...) from the instance documents under test/fixtures/platforms. Run on
// 169.254.169.254:80 inside a network namespace of its own:
//
//   node metadata-server.js --listen 169.254.169.254:80 --scenario FILE
//
// The scenario (JSON, read again on every request, so a test can change it between boots) names
// the platform, the user data (absent: the instance has none) and an optional fault. Each request
// is printed on stdout as a JSON line {method, url, headers}; "listening" once it listens.

import { readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

export interface Scenario {
  platform: string;
  /** The instance's user data; absent: none (404). */
  userData?: string;
  /** Every metadata request (not the token API) answers this status, or this body, or never. */
  fault?: { status?: number; body?: string; hang?: boolean };
}

export const fixturesRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../test/fixtures/platforms");

type Handler = (req: http.IncomingMessage, url: URL, s: Scenario) => Answer;
interface Answer {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

const text = (body: string, status = 200): Answer => ({ status, body, headers: { "content-type": "text/plain" } });
const notFound = (): Answer => text("Not Found", 404);
const fixture = (platform: string, file: string) => readFileSync(path.join(fixturesRoot, platform, file), "utf8");

// --- AWS IMDS: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-instance-metadata-service.html
// IMDSv2 required: a PUT to /latest/api/token with a TTL of 1..21600 s gives a token; every other
// request must carry it in X-aws-ec2-metadata-token, or it is refused with 401.
const awsTokens = new Set<string>();
const aws: Handler = (req, url, s) => {
  if (url.pathname === "/latest/api/token") {
    if (req.method !== "PUT") return text("", 405);
    const ttl = Number(req.headers["x-aws-ec2-metadata-token-ttl-seconds"]);
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > 21600) return text("", 400);
    const token = `token-${awsTokens.size + 1}`;
    awsTokens.add(token);
    return { status: 200, body: token, headers: { "x-aws-ec2-metadata-token-ttl-seconds": String(ttl) } };
  }
  if (req.method !== "GET") return text("", 405);
  if (!awsTokens.has(String(req.headers["x-aws-ec2-metadata-token"] ?? ""))) return text("", 401);
  if (url.pathname === "/latest/user-data") return s.userData === undefined ? notFound() : text(s.userData);
  const key = url.pathname.replace(/^\/latest\/meta-data\//, "");
  const value = (JSON.parse(fixture("aws", "meta-data.json")) as Record<string, string>)[key];
  return value === undefined ? notFound() : text(value);
};

const handlers: Record<string, Handler> = { aws };

function faulted(s: Scenario, url: URL): Answer | "hang" | undefined {
  if (!s.fault || url.pathname === "/latest/api/token") return undefined;
  if (s.fault.hang) return "hang";
  if (s.fault.status !== undefined) return text(s.fault.body ?? "fault", s.fault.status);
  return undefined;
}

/** The request handler, reading the scenario from `scenarioFile` on each request. */
export function metadataHandler(scenarioFile: string, onRequest: (line: string) => void): http.RequestListener {
  return (req, res) => {
    const url = new URL(req.url ?? "/", "http://169.254.169.254");
    const s = JSON.parse(readFileSync(scenarioFile, "utf8")) as Scenario;
    onRequest(JSON.stringify({ method: req.method, url: req.url, headers: req.headers }));
    const fault = faulted(s, url);
    if (fault === "hang") return;
    const handler = handlers[s.platform];
    let answer = fault ?? (handler ? handler(req, url, s) : text(`no platform ${s.platform}`, 500));
    // A fault body on a 200 is served in place of the document (malformed metadata).
    if (!fault && s.fault?.body !== undefined && answer.status === 200 && url.pathname !== "/latest/user-data") answer = { ...answer, body: s.fault.body };
    res.writeHead(answer.status, answer.headers ?? {});
    res.end(answer.body);
  };
}

function main(argv: string[]): void {
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    if (i < 0 || !argv[i + 1]) throw new Error(`${name} is required`);
    return argv[i + 1]!;
  };
  const listen = arg("--listen");
  const scenario = arg("--scenario");
  const colon = listen.lastIndexOf(":");
  const server = http.createServer(metadataHandler(scenario, (line) => process.stdout.write(`${line}\n`)));
  server.listen(Number(listen.slice(colon + 1)), listen.slice(0, colon), () => process.stdout.write("listening\n"));
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
