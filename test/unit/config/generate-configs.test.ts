import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import * as tls from "node:tls";
import { parse } from "yaml";
import { InvalidInputError } from "../../../agent/src/errors.js";
import {
  defaultInstallImage,
  generateConfigs,
  generateMachineConfig,
  machineConfigDocument,
  MachineTypeEnum,
  secretsBundleFromConfig,
  type GeneratedConfigs,
} from "../../../agent/src/config/generate/index.js";
import {
  decodePemBlocks,
  issueCertificate,
  loadCertificateAndKey,
  parsePrivateKeyPem,
  tlsKeyPem,
} from "../../../agent/src/pki/index.js";
import { readFixture } from "../pki/fixtures.js";

const stability = "types/v1alpha1/stability/v1.7";
type Obj = Record<string, unknown>;

function fixtureDoc(name: string): Obj {
  return parse(readFixture(`${stability}/${name}`)) as Obj;
}

/** Every key path of a YAML value, lists indexed by position. */
function keyPaths(value: unknown, prefix = ""): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => keyPaths(v, `${prefix}[${i}]`));
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).flatMap(([k, v]) => [`${prefix}.${k}`, ...keyPaths(v, `${prefix}.${k}`)]);
  }
  return [];
}

// The fixtures were generated with Kubernetes 1.28.0 and without install disk/image options.
const fixtureOptions = {
  clusterName: "base",
  endpoint: "https://base:6443",
  kubernetesVersion: "1.28.0",
  installDisk: "",
  installImage: "",
};

test("with the fixture's secrets and options, our documents equal the v1.7 base fixtures", () => {
  const secrets = secretsBundleFromConfig(readFixture(`${stability}/base-controlplane.yaml`));
  const cp = machineConfigDocument("controlplane", fixtureOptions, secrets);
  const worker = machineConfigDocument("worker", fixtureOptions, secrets);
  assert.deepEqual(cp, fixtureDoc("base-controlplane.yaml"));
  assert.deepEqual(worker, fixtureDoc("base-worker.yaml"));
  // Same key order too (deepEqual ignores it).
  assert.deepEqual(keyPaths(cp), keyPaths(fixtureDoc("base-controlplane.yaml")));
  assert.deepEqual(keyPaths(worker), keyPaths(fixtureDoc("base-worker.yaml")));
});

test("with the fixture's overrides, our documents equal the v1.7 override fixtures", () => {
  const secrets = secretsBundleFromConfig(readFixture(`${stability}/overrides-controlplane.yaml`));
  const options = {
    ...fixtureOptions,
    installDisk: "/dev/vda",
    installExtraKernelArgs: ["foo=bar", "bar=baz"],
    additionalSANs: ["foo", "bar"],
    kubeletExtraMounts: [{ destination: "/var/opt", type: "bind", source: "/var/opt", options: ["rshared"] }],
    sysctls: { foo: "bar" },
    registryMirrors: { "ghcr.io": { endpoints: ["https://ghcr.io.my-mirror.com"] } },
    localAPIServerPort: 5443,
    cni: { name: "custom", urls: ["https://example.com/cni.yaml"] },
    dnsDomain: "example.com",
    allowSchedulingOnControlPlanes: true,
  };
  const cp = machineConfigDocument("controlplane", options, secrets);
  const worker = machineConfigDocument("worker", options, secrets);
  assert.deepEqual(cp, fixtureDoc("overrides-controlplane.yaml"));
  assert.deepEqual(worker, fixtureDoc("overrides-worker.yaml"));
  assert.deepEqual(keyPaths(cp), keyPaths(fixtureDoc("overrides-controlplane.yaml")));
  assert.deepEqual(keyPaths(worker), keyPaths(fixtureDoc("overrides-worker.yaml")));
});

let generated: Promise<GeneratedConfigs> | undefined;
function defaults(): Promise<GeneratedConfigs> {
  generated ??= generateConfigs({ clusterName: "demo", endpoint: "https://10.5.0.2:6443" });
  return generated;
}

test("default gen config: fixture key set plus install disk/image, v1.7 defaults", async () => {
  const out = await defaults();
  const cp = parse(out.controlplane) as Obj;
  const worker = parse(out.worker) as Obj;
  const extra = [".machine.install.disk", ".machine.install.image"];
  assert.deepEqual(
    keyPaths(cp),
    [...keyPaths(fixtureDoc("base-controlplane.yaml")), ...extra].sort(byFixtureOrder(keyPaths(cp))),
  );
  assert.deepEqual(new Set(keyPaths(worker)), new Set([...keyPaths(fixtureDoc("base-worker.yaml")), ...extra]));

  const m = cp.machine as Obj;
  const c = cp.cluster as Obj;
  assert.deepEqual(m.install, { disk: "/dev/sda", image: defaultInstallImage, wipe: false });
  assert.equal((m.kubelet as Obj).image, "ghcr.io/siderolabs/kubelet:v1.30.3");
  assert.equal((c.apiServer as Obj).image, "registry.k8s.io/kube-apiserver:v1.30.3");
  assert.deepEqual((c.apiServer as Obj).certSANs, ["10.5.0.2"]);
  assert.deepEqual(c.controlPlane, { endpoint: "https://10.5.0.2:6443" });
  assert.equal(c.clusterName, "demo");
  assert.deepEqual(c.network, {
    dnsDomain: "cluster.local",
    podSubnets: ["10.244.0.0/16"],
    serviceSubnets: ["10.96.0.0/12"],
  });
  assert.deepEqual(m.features, {
    rbac: true,
    stableHostname: true,
    apidCheckExtKeyUsage: true,
    diskQuotaSupport: true,
    kubePrism: { enabled: true, port: 7445 },
    hostDNS: { enabled: true },
  });
  assert.equal(cp.persist, true);
  assert.equal(cp.debug, false);
});

/** Sort comparator keeping paths in the order they appear in `order`. */
function byFixtureOrder(order: string[]) {
  return (a: string, b: string) => order.indexOf(a) - order.indexOf(b);
}

test("worker config carries CA certificates only, no keys", async () => {
  const out = await defaults();
  const worker = parse(out.worker) as { machine: Obj; cluster: Obj };
  const cp = parse(out.controlplane) as { machine: Obj; cluster: Obj };
  assert.equal((worker.machine.ca as Obj).key, "");
  assert.equal((worker.cluster.ca as Obj).key, "");
  assert.equal((worker.machine.ca as Obj).crt, (cp.machine.ca as Obj).crt);
  assert.equal((worker.cluster.ca as Obj).crt, (cp.cluster.ca as Obj).crt);
  for (const key of [
    "aggregatorCA",
    "serviceAccount",
    "etcd",
    "apiServer",
    "secretboxEncryptionSecret",
    "clusterName",
  ]) {
    assert.equal(key in worker.cluster, false, key);
  }
  assert.equal(worker.machine.type, "worker");
  assert.equal(worker.machine.token, cp.machine.token);
  // Control plane carries the keys as Talos writes them.
  const b64pem = (v: unknown) => Buffer.from(String(v), "base64").toString("utf8");
  assert.equal(decodePemBlocks(b64pem((cp.machine.ca as Obj).key))[0]?.label, "ED25519 PRIVATE KEY");
  assert.equal(decodePemBlocks(b64pem((cp.cluster.ca as Obj).key))[0]?.label, "EC PRIVATE KEY");
  assert.equal(decodePemBlocks(b64pem((cp.cluster.serviceAccount as Obj).key))[0]?.label, "RSA PRIVATE KEY");
});

test("talosconfig: context named after the cluster, OS CA, admin client cert", async () => {
  const out = await defaults();
  const tc = parse(out.talosconfig) as { context: string; contexts: Record<string, Obj> };
  assert.equal(tc.context, "demo");
  assert.deepEqual(Object.keys(tc.contexts), ["demo"]);
  const ctx = tc.contexts.demo!;
  assert.deepEqual(Object.keys(ctx), ["endpoints", "ca", "crt", "key"]);
  assert.deepEqual(ctx.endpoints, []);
  const pem = (v: unknown) => Buffer.from(String(v), "base64").toString("utf8");
  assert.equal(pem(ctx.ca), out.secrets.certs.os.crt);
  const crt = new X509Certificate(pem(ctx.crt));
  assert.equal(crt.subject, "O=os:admin");
  assert.deepEqual(crt.keyUsage, ["1.3.6.1.5.5.7.3.2"]);
  assert.equal(crt.ca, false);
  assert.equal(crt.publicKey.asymmetricKeyType, "ed25519");
  assert.equal(crt.validToDate.getTime() - crt.validFromDate.getTime(), 8760 * 3600 * 1000);
  assert.ok(crt.verify(new X509Certificate(out.secrets.certs.os.crt).publicKey));
  assert.equal(decodePemBlocks(pem(ctx.key))[0]?.label, "ED25519 PRIVATE KEY");
  assert.deepEqual(
    parsePrivateKeyPem(pem(ctx.key)).publicKey.export({ format: "der", type: "spki" }),
    crt.publicKey.export({ format: "der", type: "spki" }),
  );
});

test("talosconfig credentials complete an mTLS handshake with a server cert from the config's OS CA", async (t) => {
  const out = await defaults();
  const cp = parse(out.controlplane) as { machine: { ca: { crt: string; key: string } } };
  const pem = (v: string) => Buffer.from(v, "base64").toString("utf8");
  // What apid does on a control-plane node: issue its server cert from machine.ca.
  const osCA = await loadCertificateAndKey(pem(cp.machine.ca.crt), pem(cp.machine.ca.key));
  const server = await issueCertificate(osCA, {
    commonName: "cp-1",
    ipAddresses: ["127.0.0.1"],
    extKeyUsage: ["serverAuth"],
    lifetimeMs: 24 * 3600_000,
  });
  const ctx = (parse(out.talosconfig) as { contexts: Record<string, { ca: string; crt: string; key: string }> })
    .contexts.demo!;

  const roles: unknown[] = [];
  const srv = tls.createServer(
    {
      cert: server.certPem,
      key: tlsKeyPem(server.keyPem),
      ca: osCA.certPem,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (socket) => {
      roles.push(socket.getPeerCertificate().subject?.O);
      socket.end("ok");
    },
  );
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  t.after(() => srv.close());
  const socket = tls.connect({
    host: "127.0.0.1",
    port: (srv.address() as AddressInfo).port,
    ca: pem(ctx.ca),
    cert: pem(ctx.crt),
    key: tlsKeyPem(pem(ctx.key)),
  });
  const data: Buffer[] = [];
  socket.on("data", (d: Buffer) => data.push(d));
  await once(socket, "end");
  socket.destroy();
  assert.equal(Buffer.concat(data).toString(), "ok");
  assert.deepEqual(roles, ["os:admin"]);
});

test("additional SANs go to machine.certSANs and after the endpoint host in apiServer.certSANs", async () => {
  const out = await defaults();
  const doc = machineConfigDocument(
    "controlplane",
    {
      clusterName: "demo",
      endpoint: "https://[fd00::2]:6443",
      additionalSANs: ["10.5.0.9", "api.example.org", "10.5.0.9"],
    },
    out.secrets,
  ) as { machine: Obj; cluster: { apiServer: Obj } };
  assert.deepEqual(doc.machine.certSANs, ["10.5.0.9", "api.example.org"]);
  assert.deepEqual(doc.cluster.apiServer.certSANs, ["fd00::2", "10.5.0.9", "api.example.org"]);
});

test("endpoint must be an https:// URL with a port", async () => {
  for (const endpoint of ["http://10.5.0.2:6443", "https://10.5.0.2", "10.5.0.2:6443", "", "https://:6443"]) {
    await assert.rejects(generateConfigs({ clusterName: "demo", endpoint }), (err: unknown) => {
      assert.ok(err instanceof InvalidInputError, endpoint);
      assert.match(err.message, /cluster endpoint/);
      return true;
    });
  }
  await assert.rejects(generateConfigs({ clusterName: "", endpoint: "https://a:6443" }), InvalidInputError);
  await assert.rejects(
    generateConfigs({ clusterName: "x", endpoint: "https://a:6443", kubernetesVersion: "latest" }),
    InvalidInputError,
  );
  // Port 443 spelled out is accepted even though URL normalizes it away.
  const doc = machineConfigDocument(
    "worker",
    { clusterName: "x", endpoint: "https://a:443" },
    (await defaults()).secrets,
  ) as { cluster: { controlPlane: Obj } };
  assert.equal(doc.cluster.controlPlane.endpoint, "https://a:443");
});

test("given secrets are reused (--with-secrets)", async () => {
  const first = await defaults();
  const again = await generateConfigs({
    clusterName: "demo",
    endpoint: "https://10.5.0.2:6443",
    secrets: first.secrets,
  });
  assert.equal(again.controlplane, first.controlplane);
  assert.equal(again.worker, first.worker);
  assert.notEqual(again.talosconfig, first.talosconfig, "a new client certificate each time");
});

test("secretsBundleFromConfig refuses a worker config (no keys)", async () => {
  const out = await defaults();
  assert.throws(() => secretsBundleFromConfig(out.worker), InvalidInputError);
  assert.deepEqual(secretsBundleFromConfig(out.controlplane), out.secrets);
});

test("GenerateConfiguration request -> one document and a talosconfig, node's secrets reused", async () => {
  const { secrets } = await defaults();
  const reply = await generateMachineConfig(
    {
      config_version: "v1alpha1",
      cluster_config: {
        name: "demo",
        control_plane: { endpoint: "https://10.5.0.2:6443" },
        cluster_network: { dns_domain: "corp.local", cni_config: { name: "none", urls: [] } },
        allow_scheduling_on_control_planes: false,
      },
      machine_config: {
        type: MachineTypeEnum.TYPE_WORKER,
        install_config: { install_disk: "/dev/vda", install_image: "" },
        network_config: {
          hostname: "worker-7",
          interfaces: [
            {
              interface: "eth0",
              cidr: "10.5.0.7/24",
              mtu: 0,
              dhcp: false,
              ignore: false,
              dhcp_options: null,
              routes: [{ network: "0.0.0.0/0", gateway: "10.5.0.1", metric: 0 }],
            },
          ],
        },
        kubernetes_version: "v1.29.1",
      },
      override_time: { seconds: 1_800_000_000, nanos: 0 },
    },
    { secrets },
  );
  assert.equal(reply.type, "worker");
  assert.equal(reply.data.length, 1);
  const doc = parse(reply.data[0]!) as { machine: Obj; cluster: Obj };
  assert.equal(doc.machine.type, "worker");
  assert.deepEqual(doc.machine.network, {
    hostname: "worker-7",
    interfaces: [
      { interface: "eth0", addresses: ["10.5.0.7/24"], routes: [{ network: "0.0.0.0/0", gateway: "10.5.0.1" }] },
    ],
  });
  assert.deepEqual(doc.machine.install, { disk: "/dev/vda", image: defaultInstallImage, wipe: false });
  assert.equal((doc.machine.kubelet as Obj).image, "ghcr.io/siderolabs/kubelet:v1.29.1");
  assert.deepEqual((doc.cluster.network as Obj).cni, { name: "none" });
  assert.equal((doc.cluster.network as Obj).dnsDomain, "corp.local");
  assert.equal(doc.machine.token, secrets.trustdInfo.token);
  const tc = parse(reply.talosconfig) as { contexts: Record<string, { crt: string }> };
  const crt = new X509Certificate(Buffer.from(tc.contexts.demo!.crt, "base64"));
  assert.equal(crt.validFromDate.getTime(), 1_800_000_000_000);

  await assert.rejects(
    generateMachineConfig(
      { machine_config: { type: 0 }, cluster_config: { name: "x", control_plane: { endpoint: "https://a:6443" } } },
      { secrets },
    ),
    InvalidInputError,
  );
  await assert.rejects(
    generateMachineConfig({ config_version: "v2", machine_config: { type: 3 } }, { secrets }),
    InvalidInputError,
  );
});
