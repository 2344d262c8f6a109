import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { parse } from "yaml";
import { main } from "../../../agent/src/cmd/ctl.js";
import { InvalidInputError } from "../../../agent/src/errors.js";
import { loadSecretsBundle } from "../../../agent/src/config/generate/index.js";
import { readFixture } from "../pki/fixtures.js";

interface Scratch {
  dir: string;
  io: { out(text: string): void; log(line: string): void; cwd(): string };
  /** What went to stderr (progress). */
  lines: string[];
  /** What went to stdout. */
  stdout: string[];
}

async function scratch(t: { after(fn: () => Promise<void>): void }): Promise<Scratch> {
  const dir = await mkdtemp(path.join(tmpdir(), "basalt-ctl-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const lines: string[] = [];
  const stdout: string[] = [];
  return { dir, lines, stdout, io: { out: (text) => stdout.push(text), log: (l) => lines.push(l), cwd: () => dir } };
}

test("gen config with --with-secrets writes the three files (0600) and refuses to overwrite without --force", async (t) => {
  const { dir, io, lines } = await scratch(t);
  await writeFile(path.join(dir, "secrets.yaml"), readFixture("generate/secrets/secrets.yaml"));
  const args = [
    "gen",
    "config",
    "demo",
    "https://10.5.0.2:6443",
    "--with-secrets",
    "secrets.yaml",
    "--output-dir",
    "out",
    "--install-disk",
    "/dev/vda",
    "--additional-sans",
    "api.example.org,10.5.0.100",
  ];
  await main(args, io);
  assert.deepEqual(
    lines,
    ["controlplane.yaml", "worker.yaml", "talosconfig"].map((f) => `created ${path.join(dir, "out", f)}`),
  );

  const cp = parse(await readFile(path.join(dir, "out", "controlplane.yaml"), "utf8")) as {
    machine: Record<string, unknown>;
    cluster: Record<string, unknown>;
  };
  assert.equal(cp.machine.token, "oamejv.9tk1nhuwnlc2nghf", "token from the given bundle");
  assert.equal((cp.machine.install as Record<string, unknown>).disk, "/dev/vda");
  assert.deepEqual(cp.machine.certSANs, ["api.example.org", "10.5.0.100"]);
  const tc = parse(await readFile(path.join(dir, "out", "talosconfig"), "utf8")) as { context: string };
  assert.equal(tc.context, "demo");
  assert.equal((await stat(path.join(dir, "out", "worker.yaml"))).mode & 0o777, 0o600);

  const before = await readFile(path.join(dir, "out", "controlplane.yaml"), "utf8");
  await assert.rejects(
    main(args, io),
    (err: unknown) => err instanceof InvalidInputError && /already exists, use --force/.test(err.message),
  );
  assert.equal(await readFile(path.join(dir, "out", "controlplane.yaml"), "utf8"), before, "untouched");
  await main([...args, "--force"], io);
  assert.notEqual(await readFile(path.join(dir, "out", "talosconfig"), "utf8"), "", "rewritten");
});

test("gen secrets writes a loadable bundle; bad arguments fail before writing", async (t) => {
  const { dir, io } = await scratch(t);
  await main(["gen", "secrets", "-o", "s.yaml"], io);
  const bundle = loadSecretsBundle(await readFile(path.join(dir, "s.yaml")));
  assert.match(bundle.certs.os.key, /ED25519 PRIVATE KEY/);
  await assert.rejects(main(["gen", "secrets", "-o", "s.yaml"], io), /already exists/);

  await assert.rejects(main(["gen", "config", "demo", "http://10.5.0.2:6443", "--output-dir", "bad"], io), /https/);
  await assert.rejects(stat(path.join(dir, "bad")), { code: "ENOENT" });
  await assert.rejects(main(["gen", "config", "demo"], io), InvalidInputError);
  await assert.rejects(main(["gen", "nope"], io), /unknown command/);
  await assert.rejects(main(["gen", "config", "a", "https://a:1", "--bogus"], io), /unknown flag/);
});

test("gen config applies --config-patch (all), -control-plane and -worker patches, inline or @file", async (t) => {
  const { dir, io } = await scratch(t);
  await writeFile(path.join(dir, "secrets.yaml"), readFixture("generate/secrets/secrets.yaml"));
  await writeFile(path.join(dir, "cp.yaml"), "cluster:\n  allowSchedulingOnControlPlanes: true\n");
  await main(
    [
      "gen",
      "config",
      "demo",
      "https://10.5.0.2:6443",
      "--with-secrets",
      "secrets.yaml",
      "--output-dir",
      "out",
      "--config-patch",
      '{"machine": {"sysctls": {"a.b": "1", "c.d": "2"}}}',
      "--config-patch-control-plane",
      "@cp.yaml",
      "--config-patch-worker=" + '[{"op": "add", "path": "/machine/network/hostname", "value": "w1"}]',
    ],
    io,
  );
  const read = async (f: string) =>
    parse(await readFile(path.join(dir, "out", f), "utf8")) as {
      machine: Record<string, unknown>;
      cluster: Record<string, unknown>;
    };
  const cp = await read("controlplane.yaml");
  const worker = await read("worker.yaml");
  assert.deepEqual(cp.machine.sysctls, { "a.b": "1", "c.d": "2" });
  assert.deepEqual(worker.machine.sysctls, { "a.b": "1", "c.d": "2" });
  assert.equal(cp.cluster.allowSchedulingOnControlPlanes, true);
  assert.equal(worker.cluster.allowSchedulingOnControlPlanes, undefined);
  assert.equal((worker.machine.network as Record<string, unknown>).hostname, "w1");
  assert.equal((cp.machine.network as Record<string, unknown>).hostname, undefined);
  // A patch with an unknown key fails and writes nothing.
  await assert.rejects(
    main(
      [
        "gen",
        "config",
        "demo",
        "https://10.5.0.2:6443",
        "--with-secrets",
        "secrets.yaml",
        "--output-dir",
        "out2",
        "--config-patch",
        "machine: {bogus: 1}",
      ],
      io,
    ),
  );
  await assert.rejects(stat(path.join(dir, "out2", "controlplane.yaml")), { code: "ENOENT" });
});

test("gen key/csr/crt mint an admin client certificate from machine.ca that apid-style mTLS accepts", async (t) => {
  const { dir, io } = await scratch(t);
  await main(["gen", "ca", "--organization", "talos"], io);
  await main(["gen", "key", "--name", "admin"], io);
  await main(["gen", "csr", "--key", "admin.key", "--ip", "127.0.0.1", "--roles", "os:operator"], io);
  await main(["gen", "crt", "--ca", "talos", "--csr", "admin.csr", "--name", "admin", "--hours", "2"], io);
  const { X509Certificate } = await import("node:crypto");
  const caPem = await readFile(path.join(dir, "talos.crt"), "utf8");
  assert.match(await readFile(path.join(dir, "talos.key"), "utf8"), /^-----BEGIN ED25519 PRIVATE KEY-----/);
  assert.match(await readFile(path.join(dir, "admin.key"), "utf8"), /^-----BEGIN ED25519 PRIVATE KEY-----/);
  const crt = new X509Certificate(await readFile(path.join(dir, "admin.crt")));
  assert.equal(crt.subject, "O=os:operator");
  assert.deepEqual(crt.keyUsage, ["1.3.6.1.5.5.7.3.2"]);
  assert.equal(crt.validToDate.getTime() - crt.validFromDate.getTime(), 2 * 3600_000);
  assert.ok(crt.verify(new X509Certificate(caPem).publicKey));
  await assert.rejects(main(["gen", "key", "--name", "admin"], io), /already exists/);
  await assert.rejects(main(["gen", "csr", "--key", "admin.key"], io), /--ip is required/);

  await main(["gen", "keypair", "--organization", "self", "--ip", "10.0.0.1"], io);
  const self = new X509Certificate(await readFile(path.join(dir, "self.crt")));
  assert.ok(self.verify(self.publicKey), "self-signed");
  assert.equal(self.subjectAltName, "IP Address:10.0.0.1");
});

test("gen config --output-types: one type to a file or stdout, several to a directory", async (t) => {
  const { dir, io, stdout } = await scratch(t);
  await writeFile(path.join(dir, "secrets.yaml"), readFixture("generate/secrets/secrets.yaml"));
  const base = ["gen", "config", "demo", "https://10.5.0.2:6443", "--with-secrets", "secrets.yaml"];
  await main([...base, "--output-types", "talosconfig", "-o", "my-talosconfig"], io);
  assert.equal(
    (parse(await readFile(path.join(dir, "my-talosconfig"), "utf8")) as { context: string }).context,
    "demo",
  );

  await main([...base, "-t", "worker", "-o", "-"], io);
  assert.equal(stdout.length, 1);
  assert.equal((parse(stdout[0]!) as { machine: { type: string } }).machine.type, "worker");

  await main([...base, "--output-types", "controlplane,worker", "-o", "two"], io);
  await stat(path.join(dir, "two", "controlplane.yaml"));
  await stat(path.join(dir, "two", "worker.yaml"));
  await assert.rejects(stat(path.join(dir, "two", "talosconfig")), { code: "ENOENT" });

  await assert.rejects(main([...base, "--output-types", "kubeconfig"], io), /unknown output type/);
  await assert.rejects(main([...base, "-o", "-"], io), /exactly one/);
});
