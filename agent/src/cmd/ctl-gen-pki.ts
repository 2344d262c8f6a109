// `ctl gen ca|key|csr|crt|keypair`: talosctl's commands for handling PKI by hand
// (e.g. minting or renewing an admin client certificate from machine.ca).
import { readFile } from "node:fs/promises";
import path from "node:path";
import { InvalidInputError } from "../errors.js";
import {
  caLifetimeMs,
  createCSR,
  generateKeyPair,
  generateSelfSignedCA,
  hourMs,
  issueCertificate,
  loadCertificateAndKey,
  parsePrivateKeyPem,
  privateKeyToPem,
  signCSR,
  splitSANs,
} from "../pki/index.js";
import { parseFlags } from "../flags.js";
import { refuseExisting, writeSecretFile, type CtlIO } from "./ctl-gen.js";

function required(flags: Record<string, string | boolean | string[]>, name: string): string {
  const v = flags[name];
  if (typeof v !== "string" || v === "") throw new InvalidInputError(`flag --${name} is required`);
  return v;
}

function hours(flags: Record<string, string | boolean | string[]>, fallbackMs: number): number {
  const v = flags.hours;
  if (v === undefined) return fallbackMs;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0)
    throw new InvalidInputError(`--hours must be a positive integer, got ${String(v)}`);
  return n * hourMs;
}

function noArgs(positional: string[], command: string): void {
  if (positional.length > 0) throw new InvalidInputError(`${command} takes no arguments, got ${positional.join(" ")}`);
}

/** Writes every file after checking none exists (unless --force). */
async function writeAll(io: CtlIO, files: [string, string][], force: boolean): Promise<void> {
  const resolved = files.map(([f, text]) => [path.resolve(io.cwd(), f), text] as const);
  await refuseExisting(
    resolved.map(([f]) => f),
    force,
  );
  for (const [file, text] of resolved) {
    await writeSecretFile(file, text);
    io.log(`created ${file}`);
  }
}

/** gen ca --organization O [--hours 87600] [--rsa]: self-signed CA, O.crt + O.key. */
export async function genCA(argv: string[], io: CtlIO): Promise<void> {
  const { flags, positional } = parseFlags(argv, {
    organization: "string",
    hours: "string",
    rsa: "boolean",
    force: "boolean",
  });
  noArgs(positional, "gen ca");
  const org = required(flags, "organization");
  const ca = await generateSelfSignedCA({
    organizations: [org],
    algorithm: flags.rsa === true ? "rsa" : "ed25519",
    lifetimeMs: hours(flags, caLifetimeMs),
  });
  await writeAll(
    io,
    [
      [`${org}.crt`, ca.certPem],
      [`${org}.key`, ca.keyPem],
    ],
    flags.force === true,
  );
}

/** gen key --name N: Ed25519 private key N.key. */
export async function genKey(argv: string[], io: CtlIO): Promise<void> {
  const { flags, positional } = parseFlags(argv, { name: "string", force: "boolean" });
  noArgs(positional, "gen key");
  const name = required(flags, "name");
  await writeAll(io, [[`${name}.key`, privateKeyToPem(await generateKeyPair("ed25519"))]], flags.force === true);
}

/** gen csr --key K.key --ip IP [--roles os:admin]: CSR K.csr with O = roles and the IP SAN. */
export async function genCSR(argv: string[], io: CtlIO): Promise<void> {
  const { flags, positional } = parseFlags(argv, { key: "string", ip: "list", roles: "list", force: "boolean" });
  noArgs(positional, "gen csr");
  const keyFile = required(flags, "key");
  const sans = splitSANs((flags.ip as string[] | undefined) ?? []);
  if (sans.ipAddresses.length === 0) throw new InvalidInputError("flag --ip is required");
  const key = parsePrivateKeyPem(await readFile(path.resolve(io.cwd(), keyFile)));
  const { csrPem } = await createCSR({
    key,
    organizations: (flags.roles as string[] | undefined) ?? ["os:admin"],
    ...sans,
  });
  const base = keyFile.replace(/\.key$/, "");
  await writeAll(io, [[`${base}.csr`, csrPem]], flags.force === true);
}

/**
 * gen crt --ca CA --csr F.csr --name N [--hours 24]: signs a client CSR with
 * CA.crt/CA.key, keeping its roles, into N.crt.
 */
export async function genCrt(argv: string[], io: CtlIO): Promise<void> {
  const { flags, positional } = parseFlags(argv, {
    ca: "string",
    csr: "string",
    name: "string",
    hours: "string",
    force: "boolean",
  });
  noArgs(positional, "gen crt");
  const caBase = path.resolve(io.cwd(), required(flags, "ca"));
  const ca = await loadCertificateAndKey(await readFile(`${caBase}.crt`), await readFile(`${caBase}.key`));
  const csr = await readFile(path.resolve(io.cwd(), required(flags, "csr")));
  const name = required(flags, "name");
  const { certPem } = await signCSR(ca, csr, {
    keepOrganization: true,
    extKeyUsage: ["clientAuth"],
    lifetimeMs: hours(flags, 24 * hourMs),
  });
  await writeAll(io, [[`${name}.crt`, certPem]], flags.force === true);
}

/** gen keypair --organization O --ip IP: a self-signed server/client pair, O.crt + O.key. */
export async function genKeypair(argv: string[], io: CtlIO): Promise<void> {
  const { flags, positional } = parseFlags(argv, {
    organization: "string",
    ip: "list",
    hours: "string",
    force: "boolean",
  });
  noArgs(positional, "gen keypair");
  const org = required(flags, "organization");
  const sans = splitSANs((flags.ip as string[] | undefined) ?? []);
  // A self-signed leaf: its own CA of one, signing itself.
  const ca = await generateSelfSignedCA({ organizations: [org], lifetimeMs: hours(flags, caLifetimeMs) });
  const pair = await issueCertificate(ca, {
    organizations: [org],
    ...sans,
    extKeyUsage: ["serverAuth", "clientAuth"],
    lifetimeMs: hours(flags, caLifetimeMs),
    key: ca.key,
  });
  await writeAll(
    io,
    [
      [`${org}.crt`, pair.certPem],
      [`${org}.key`, pair.keyPem],
    ],
    flags.force === true,
  );
}
