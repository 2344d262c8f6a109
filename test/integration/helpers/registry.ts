// Debian's docker-registry (distribution 2.8) on loopback for tests: its own port and
// storage directory, HTTPS with a throwaway CA, and token authentication answered
// by a small token server here (ES256 JWTs whose x5c chains to the registry's bundle).

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createPrivateKey, sign } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

export const registryBinary = "/usr/bin/docker-registry";

export interface TestRegistry {
  /** host:port */
  host: string;
  storage: string;
  /** PEM of the CA that signed the registry's certificate. */
  ca: string;
  username: string;
  password: string;
  /** Basic-authenticated token requests the token server answered, with their scopes. */
  tokenRequests: string[];
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

function openssl(args: string[]): void {
  execFileSync("openssl", args, { stdio: "ignore" });
}

function b64url(b: Buffer | string): string {
  return Buffer.from(b).toString("base64url");
}

export interface RegistryOptions {
  /** Plain HTTP without authentication, on every address (a QEMU guest reaches it at 10.0.2.2). */
  plain?: boolean;
}

export async function startRegistry(dir: string, opts: RegistryOptions = {}): Promise<TestRegistry> {
  fs.mkdirSync(dir, { recursive: true });
  const f = (n: string) => path.join(dir, n);
  // A CA, the registry's server certificate for 127.0.0.1, and the token signer's self-signed certificate.
  openssl([
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    f("ca.key"),
    "-out",
    f("ca.crt"),
    "-subj",
    "/CN=basalt test CA",
    "-days",
    "2",
  ]);
  openssl([
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    f("server.key"),
    "-out",
    f("server.csr"),
    "-subj",
    "/CN=127.0.0.1",
  ]);
  fs.writeFileSync(f("san.ext"), "subjectAltName=IP:127.0.0.1\n");
  openssl([
    "x509",
    "-req",
    "-in",
    f("server.csr"),
    "-CA",
    f("ca.crt"),
    "-CAkey",
    f("ca.key"),
    "-CAcreateserial",
    "-out",
    f("server.crt"),
    "-days",
    "2",
    "-extfile",
    f("san.ext"),
  ]);
  openssl([
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    f("token.key"),
    "-out",
    f("token.crt"),
    "-subj",
    "/CN=basalt token signer",
    "-days",
    "2",
  ]);
  const tokenKey = createPrivateKey(fs.readFileSync(f("token.key")));
  const tokenCertDer = Buffer.from(
    fs.readFileSync(f("token.crt"), "utf8").replace(/-----[^-]+-----|\s/g, ""),
    "base64",
  );

  const username = "basalt";
  const password = "s3cret";
  const service = "basalt-test-registry";
  const issuer = "basalt-test-issuer";
  const tokenRequests: string[] = [];
  const tokenServer = http.createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://x");
    const expected = `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
    if (req.headers.authorization !== expected || u.searchParams.get("service") !== service) {
      res.writeHead(401).end();
      return;
    }
    const scope = u.searchParams.get("scope") ?? "";
    tokenRequests.push(scope);
    const [type, name, actions] = scope.split(":");
    const now = Math.floor(Date.now() / 1000);
    const header = { alg: "ES256", typ: "JWT", x5c: [tokenCertDer.toString("base64")] };
    const claims = {
      iss: issuer,
      sub: username,
      aud: service,
      iat: now - 10,
      nbf: now - 10,
      exp: now + 600,
      jti: `${now}-${tokenRequests.length}`,
      access: type ? [{ type, name, actions: (actions ?? "").split(",") }] : [],
    };
    const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
    const signature = sign("sha256", Buffer.from(input), { key: tokenKey, dsaEncoding: "ieee-p1363" });
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ token: `${input}.${b64url(signature)}` }));
  });
  await new Promise<void>((resolve) => tokenServer.listen(0, "127.0.0.1", resolve));
  const tokenPort = (tokenServer.address() as net.AddressInfo).port;

  const port = await freePort();
  const storage = f("storage");
  fs.writeFileSync(
    f("config.yml"),
    [
      "version: 0.1",
      "log: {level: error}",
      `storage: {filesystem: {rootdirectory: ${storage}}}`,
      ...(opts.plain
        ? [`http: {addr: "127.0.0.1:${port}", secret: basalt-test}`]
        : [
            `http: {addr: "127.0.0.1:${port}", secret: basalt-test, tls: {certificate: ${f("server.crt")}, key: ${f("server.key")}}}`,
            `auth: {token: {realm: "http://127.0.0.1:${tokenPort}/token", service: ${service}, issuer: ${issuer}, rootcertbundle: ${f("token.crt")}}}`,
          ]),
      "",
    ].join("\n"),
  );
  const child: ChildProcess = spawn(registryBinary, ["serve", f("config.yml")], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const ca = fs.readFileSync(f("ca.crt"), "utf8");
  const stop = async () => {
    child.kill("SIGTERM");
    await new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once("exit", () => resolve())));
    await new Promise<void>((resolve) => tokenServer.close(() => resolve()));
  };
  // Until /v2/ answers (401 where it wants a token), the registry is still starting.
  for (let i = 0; ; i++) {
    const status = await new Promise<number>((resolve) => {
      const done = (res: http.IncomingMessage) => (res.resume(), resolve(res.statusCode ?? 0));
      (opts.plain
        ? http.get({ host: "127.0.0.1", port, path: "/v2/" }, done)
        : https.get({ host: "127.0.0.1", port, path: "/v2/", ca }, done)
      ).on("error", () => resolve(0));
    });
    if (status === (opts.plain ? 200 : 401)) break;
    if (child.exitCode !== null || i > 300) {
      await stop();
      throw new Error(`docker-registry did not start: ${stderr}`);
    }
    await sleep(100);
  }
  return { host: `127.0.0.1:${port}`, storage, ca, username, password, tokenRequests, stop };
}
