import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const cmdDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../agent/src/cmd");
const secretsDir = path.resolve(cmdDir, "../controllers/secrets");
const pkiDir = path.resolve(cmdDir, "../pki");

/**
 * The CommonJS packages a fresh Node process has loaded after `script` (an ES module body) ran:
 * @peculiar/x509 and its ASN.1 stack are CommonJS, so Node's require cache lists them once loaded.
 */
function loadedPackagesAfter(script: string): string[] {
  const body = `${script}
const { createRequire } = await import("node:module");
const loaded = Object.keys(createRequire(import.meta.url).cache);
process.stdout.write(JSON.stringify(loaded));`;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", body], { encoding: "utf8" });
  return (JSON.parse(out) as string[])
    .map((file) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1] ?? "")
    .filter(Boolean);
}

const x509Stack = /^(@peculiar\/|asn1js$|tsyringe$|reflect-metadata$|pvtsutils$|pvutils$)/;

test("machined's and the sandbox's start, then the maintenance certificate and its banner fingerprint, load no X.509 library", () => {
  const loaded = loadedPackagesAfter(`
await import(${JSON.stringify(path.join(cmdDir, "machined.js"))});
await import(${JSON.stringify(path.join(cmdDir, "sandbox.js"))});
const { generateMaintenanceRoot, issueServerCert } = await import(${JSON.stringify(path.join(secretsDir, "issue.js"))});
const { spkiFingerprint } = await import(${JSON.stringify(path.join(pkiDir, "fingerprint.js"))});
const root = await generateMaintenanceRoot();
const server = await issueServerCert(root, { ips: ["10.0.2.15", "127.0.0.1", "::1"], dnsNames: ["talos-abc"], fqdn: "maintenance-service.talos.dev" });
spkiFingerprint(server.crt);`);
  assert.ok(loaded.includes("@grpc/grpc-js"), "the probe sees CommonJS packages machined loads");
  assert.deepEqual([...new Set(loaded.filter((p) => x509Stack.test(p)))], []);
});

test("the probe does see the X.509 stack once config generation is used (ctl, GenerateConfiguration)", () => {
  const loaded = loadedPackagesAfter(
    `await import(${JSON.stringify(path.resolve(cmdDir, "../config/generate/index.js"))});`,
  );
  assert.ok(loaded.includes("@peculiar/x509"));
});
