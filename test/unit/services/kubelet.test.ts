import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { parse } from "yaml";
import {
  kubeletFiles,
  kubeletHealth,
  kubeletImageProcess,
  kubeletMounts,
  kubeletProcess,
  kubeletService,
  writeKubeletFiles,
  type KubeletProcess,
} from "../../../agent/src/services/definitions/kubelet.js";
import {
  K8S_NAMESPACE,
  KubeletId,
  KubeletSecretsType,
  KubeletSpecType,
  type KubeletSecretsSpec,
  type KubeletSpecSpec,
} from "../../../agent/src/resources/catalog/k8s-kubelet.js";
import { ResourceState } from "../../../agent/src/resources/state.js";
import type { ServiceRunner } from "../../../agent/src/services/service.js";

const spec: KubeletSpecSpec = {
  image: "ghcr.io/siderolabs/kubelet:v1.30.3",
  args: ["--config=/etc/kubernetes/kubelet.yaml", "--node-ip=10.5.0.3"],
  extraMounts: [
    {
      destination: "/var/lib/example",
      type: "bind",
      source: "/var/lib/example",
      options: ["bind", "rshared", "rw"],
      uidMappings: [],
      gidMappings: [],
    },
  ],
  expectedNodename: "worker-1",
  config: {
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    clusterDNS: ["10.96.0.10"],
    port: 10250,
    logging: { flushFrequency: 0, options: { json: { infoBufferSize: "0" } } },
  },
};
const secrets: KubeletSecretsSpec = {
  endpoint: "https://127.0.0.1:7445",
  acceptedCAs: ["-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n"],
  bootstrapTokenID: "abcdef",
  bootstrapTokenSecret: "0123456789abcdef",
};

test("kubeletProcess: Talos's image, args, mounts (then extra mounts), cgroup, OOM score, host namespaces, in containerd's system namespace", () => {
  const p = kubeletProcess(spec, ["HTTP_PROXY=http://proxy:3128"]);
  assert.equal(p.image, "ghcr.io/siderolabs/kubelet:v1.30.3");
  assert.equal(p.namespace, "system");
  assert.deepEqual(p.args, ["/usr/local/bin/kubelet", "--config=/etc/kubernetes/kubelet.yaml", "--node-ip=10.5.0.3"]);
  assert.deepEqual(p.env, ["HTTP_PROXY=http://proxy:3128"]);
  assert.deepEqual(
    p.mounts.map((m) => `${m.source}:${m.destination}:${m.options.join(",")}`),
    [
      "/dev:/dev:rbind,rshared,rw",
      "/sys:/sys:bind,ro",
      "/sys/fs/cgroup:/sys/fs/cgroup:rbind,rshared,rw",
      "/lib/modules:/lib/modules:bind,ro",
      "/etc/kubernetes:/etc/kubernetes:bind,rshared,rw",
      "/usr/local/lib/kubelet/credentialproviders:/usr/local/lib/kubelet/credentialproviders:bind,ro",
      "/etc/nfsmount.conf:/etc/nfsmount.conf:bind,ro",
      "/etc/machine-id:/etc/machine-id:bind,ro",
      "/etc/os-release:/etc/os-release:bind,ro",
      "/system/resolved/resolv.conf:/system/resolved/resolv.conf:bind,ro",
      "/etc/cni:/etc/cni:rbind,rshared,rw",
      "/usr/libexec/kubernetes:/usr/libexec/kubernetes:rbind,rshared,rw",
      "/run:/var/run:rbind,rshared,rw",
      "/var/lib/containerd:/var/lib/containerd:rbind,rshared,rw",
      "/var/lib/kubelet:/var/lib/kubelet:rbind,rshared,rw",
      "/var/log/containers:/var/log/containers:rbind,rshared,rw",
      "/var/log/pods:/var/log/pods:rbind,rshared,rw",
      "/var/lib/example:/var/lib/example:bind,rshared,rw",
    ],
  );
  assert.equal(p.mounts[1]!.type, "sysfs");
  assert.equal(p.mounts.length, kubeletMounts.length + 1);
  assert.deepEqual(
    [p.cgroup, p.oomScoreAdj, p.hostNetwork, p.hostPid, p.privileged, p.rootfsPropagation, p.user],
    ["/podruntime/kubelet", -450, true, true, true, "shared", { uid: 0, gid: 0 }],
  );
  assert.deepEqual(p.extraSeccompSyscalls, ["add_key", "request_key"]);
});

test("kubeletImageProcess: the image runner's settings for the kubelet", () => {
  const held = new Set(["CAP_SYS_ADMIN"]);
  const p = kubeletProcess(spec, []);
  const hostFiles = { hosts: "/system/etc/hosts", resolvConf: "/system/etc/resolv.conf" };
  assert.deepEqual(kubeletImageProcess(p, held, hostFiles), {
    args: p.args,
    env: [],
    user: { uid: 0, gid: 0 },
    readonlyRootfs: false,
    mounts: p.mounts,
    cgroupsPath: "/podruntime/kubelet",
    oomScoreAdj: -450,
    hostFiles,
    writeableSysfs: true,
    hostPid: true,
    maskedPaths: [],
    readonlyPaths: [],
    rootfsPropagation: "shared",
    heldCapabilities: held,
  });
});

test("kubeletFiles: bootstrap kubeconfig with the endpoint, CAs and token; the CA; kubelet.yaml holding the configuration", async () => {
  const files = kubeletFiles(spec, secrets);
  const kubeconfig = files.find((f) => f.path === "/etc/kubernetes/bootstrap-kubeconfig")!;
  assert.equal(kubeconfig.mode, 0o600);
  assert.deepEqual(parse(kubeconfig.content ?? ""), {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "local",
        cluster: {
          server: "https://127.0.0.1:7445",
          "certificate-authority-data": Buffer.from(secrets.acceptedCAs[0]!).toString("base64"),
        },
      },
    ],
    users: [{ name: "kubelet", user: { token: "abcdef.0123456789abcdef" } }],
    contexts: [{ context: { cluster: "local", user: "kubelet" } }],
  });
  assert.deepEqual(
    files.find((f) => f.path === "/etc/kubernetes/pki/ca.crt"),
    { path: "/etc/kubernetes/pki/ca.crt", content: secrets.acceptedCAs[0], mode: 0o400 },
  );
  const config = files.find((f) => f.path === "/etc/kubernetes/kubelet.yaml")!;
  assert.equal(
    config.content,
    'apiVersion: kubelet.config.k8s.io/v1beta1\nclusterDNS:\n- 10.96.0.10\nkind: KubeletConfiguration\nlogging:\n  flushFrequency: 0\n  options:\n    json:\n      infoBufferSize: "0"\nport: 10250\n',
  );

  const root = mkdtempSync(path.join(os.tmpdir(), "basalt-kubelet-"));
  try {
    await writeKubeletFiles(root, files);
    await writeKubeletFiles(root, files); // again: the 0400 CA is replaced
    assert.equal(statSync(path.join(root, "etc/kubernetes/pki/ca.crt")).mode & 0o777, 0o400);
    assert.equal(statSync(path.join(root, "etc/kubernetes/bootstrap-kubeconfig")).mode & 0o777, 0o600);
    assert.equal(readFileSync(path.join(root, "etc/kubernetes/kubelet.yaml"), "utf8"), config.content);
    assert.equal(existsSync(path.join(root, "etc/kubernetes/kubelet-credentialproviderconfig.yaml")), false);
    // A credential provider config is written beside it, and removed again when it goes.
    const providers = {
      apiVersion: "kubelet.config.k8s.io/v1",
      kind: "CredentialProviderConfig",
      providers: [
        {
          name: "ecr",
          matchImages: ["*.ecr.aws"],
          defaultCacheDuration: "12h",
          apiVersion: "credentialprovider.kubelet.k8s.io/v1",
        },
      ],
    };
    await writeKubeletFiles(root, kubeletFiles({ ...spec, credentialProviderConfig: providers }, secrets));
    assert.deepEqual(
      parse(readFileSync(path.join(root, "etc/kubernetes/kubelet-credentialproviderconfig.yaml"), "utf8")),
      providers,
    );
    await writeKubeletFiles(root, files);
    assert.equal(existsSync(path.join(root, "etc/kubernetes/kubelet-credentialproviderconfig.yaml")), false);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("kubeletService: after cri, the spec, the secrets, time and network; files written before the injected runner starts", async (t) => {
  const state = new ResourceState();
  const root = mkdtempSync(path.join(os.tmpdir(), "basalt-kubelet-svc-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const started: KubeletProcess[] = [];
  const runner = (process: KubeletProcess): ServiceRunner => ({
    start: async () => {
      started.push(process);
    },
    stop: async () => undefined,
  });
  const def = kubeletService({ state, root, env: () => ["A=1"], runner });
  assert.deepEqual(
    [def.id, def.dependsOn, def.cgroup, def.oomScoreAdj, def.restart, def.api],
    ["kubelet", ["cri"], "/podruntime/kubelet", -450, "always", { start: true, restart: true }],
  );
  assert.match(
    def.conditions![0]!.description,
    /KubeletSpecs.kubernetes.talos.dev\(kubelet\).*KubeletSecrets.secrets.talos.dev\(kubelet\).*time sync.*network address, hostname, etc-files/,
  );
  await assert.rejects(def.pre!(), /KubeletSpec is missing/);

  state.modify(K8S_NAMESPACE, KubeletSpecType, KubeletId, "test", () => spec);
  state.modify("secrets", KubeletSecretsType, KubeletId, "test", () => secrets);
  await def.pre!();
  assert.equal(
    readFileSync(path.join(root, "etc/kubernetes/bootstrap-kubeconfig"), "utf8").includes(
      "token: abcdef.0123456789abcdef",
    ),
    true,
  );
  await def.runner.start(() => undefined);
  assert.equal(started.length, 1);
  assert.deepEqual(started[0]!.env, ["A=1"]);
  assert.ok(statSync(path.join(root, "var/lib/example")).isDirectory(), "extra mount source created");
  // Each start builds its run from the spec of that moment (a new image is a new runner).
  state.modify(K8S_NAMESPACE, KubeletSpecType, KubeletId, "test", () => ({
    ...spec,
    image: "ghcr.io/siderolabs/kubelet:v1.30.4",
  }));
  await def.runner.stop();
  await def.runner.start(() => undefined);
  assert.deepEqual(
    started.map((p) => p.image),
    ["ghcr.io/siderolabs/kubelet:v1.30.3", "ghcr.io/siderolabs/kubelet:v1.30.4"],
  );
});

test("kubelet health: 200 from healthz is healthy, anything else is not", async (t) => {
  let status = 500;
  const server = http.createServer((_req, res) => {
    res.statusCode = status;
    res.end("ok");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  t.after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`;
  await assert.rejects(kubeletHealth(url), /expected HTTP status OK, got 500/);
  status = 200;
  await kubeletHealth(url);
  server.close();
  await assert.rejects(kubeletHealth(url), /kubelet health check/);
});
