// The kubelet's resources as a configured node serves them through the COSI API: what
// `talosctl get kubeprismendpoints|kubeprismconfigs|kubeletsecrets|nodeipconfigs|nodenames`
// receive (YAML and protobuf specs) for the generated control-plane config.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { decode } from "../../agent/src/api/index.js";
import { startConfiguredSandbox } from "./helpers/configured-sandbox.js";
import { eventually } from "./helpers/sandbox.js";

interface Got {
  resource: {
    metadata: { namespace: string; type: string; id: string };
    spec: { yaml_spec: string; proto_spec: Buffer };
  };
}

test("a configured control plane serves KubePrism's endpoints and config, KubeletSecrets, NodeIPConfig and Nodename", async (t) => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), "basalt-kubelet-res-"));
  const { sandbox, admin, generated } = await startConfiguredSandbox({
    clusterName: "kubelet-res",
    stateDir,
    args: ["--apid-in-process"],
  });
  t.after(async () => {
    admin.close();
    await sandbox.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });
  // The client decodes COSI replies generically; this is the shape of a Get reply.
  const get = (ns: string, type: string, id: string) =>
    eventually(async () => (await admin.resourceGet(ns, type, id)) as unknown as Got);

  const endpoints = await get("k8s", "KubePrismEndpoints.kubernetes.talos.dev", "k8s-cluster");
  assert.equal(
    endpoints.resource.spec.yaml_spec,
    "endpoints:\n    - host: 127.0.0.1\n      port: 6443\n    - host: localhost\n      port: 6443\n",
  );
  const config = await get("k8s", "KubePrismConfigs.kubernetes.talos.dev", "k8s-loadbalancer-config");
  assert.deepEqual(decode("talos.resource.definitions.k8s.KubePrismConfigSpec", config.resource.spec.proto_spec), {
    host: "127.0.0.1",
    port: 7445,
    endpoints: [
      { host: "127.0.0.1", port: 6443 },
      { host: "localhost", port: 6443 },
    ],
  });

  const secrets = await get("secrets", "KubeletSecrets.secrets.talos.dev", "kubelet");
  const spec = decode("talos.resource.definitions.secrets.KubeletSpec", secrets.resource.spec.proto_spec) as {
    endpoint: { full_path: string };
    bootstrap_token_id: string;
    bootstrap_token_secret: string;
    accepted_c_as: { crt: Buffer }[];
  };
  const [id, secret] = generated.secrets.secrets.bootstrapToken.split(".") as [string, string];
  assert.deepEqual(
    [spec.endpoint.full_path, spec.bootstrap_token_id, spec.bootstrap_token_secret],
    ["https://127.0.0.1:7445", id, secret],
  );
  assert.equal(spec.accepted_c_as.length, 1);

  const nodeIP = await get("k8s", "NodeIPConfigs.kubernetes.talos.dev", "kubelet");
  assert.equal(
    nodeIP.resource.spec.yaml_spec,
    "validSubnets:\n    - 0.0.0.0/0\nexcludeSubnets:\n    - 10.244.0.0/16\n    - 10.96.0.0/12\n",
  );

  const hostname = await get("network", "HostnameStatuses.net.talos.dev", "hostname");
  const name = /^hostname: (.*)$/m.exec(hostname.resource.spec.yaml_spec)![1]!;
  // Talos's hostnameVersion is a string of digits, which yaml.v3 quotes.
  const nodename = await get("k8s", "Nodenames.kubernetes.talos.dev", "nodename");
  assert.match(
    nodename.resource.spec.yaml_spec,
    new RegExp(`^nodename: ${name.toLowerCase()}\nhostnameVersion: "\\d+"\nskipNodeRegistration: false\n$`),
  );
});
