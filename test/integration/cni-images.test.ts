// The default CNI's images, flannel and install-cni, built by `npm run k8s-images` for amd64 and
// pushed to Debian's docker-registry on loopback, then unpacked from the archive they were pushed
// from and run in their own trees (chroot): the commands Talos's flannel DaemonSet runs in them
// (pkg/flannel/template.go), flanneld itself, and the flannel CNI plugin joined to a stand-in
// delegate that records what it is handed.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { RepositoryClient } from "../../agent/src/oci/client.js";
import { registryEndpoints } from "../../agent/src/oci/hosts.js";
import { LayoutArchive, refNameAnnotation } from "../../agent/src/oci/layout.js";
import { parseManifest } from "../../agent/src/oci/manifest.js";
import { registryBinary, startRegistry, type TestRegistry } from "./helpers/registry.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const hasGo = (process.env.PATH ?? "").split(":").some((dir) => dir !== "" && fs.existsSync(path.join(dir, "go")));
const isRoot = process.getuid?.() === 0;
const canRun = fs.existsSync(registryBinary) && hasGo && isRoot;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-cni-images-"));
const run = promisify(execFile);
let registry: TestRegistry;
let layout: LayoutArchive;

const images = {
  flannel: { reference: "ghcr.io/siderolabs/flannel:v0.25.3", repository: "siderolabs/flannel", tag: "v0.25.3" },
  "install-cni": {
    reference: "ghcr.io/siderolabs/install-cni:v1.7.0-2-g7c627a8",
    repository: "siderolabs/install-cni",
    tag: "v1.7.0-2-g7c627a8",
  },
} as const;

/** containernetworking/plugins v1.4.1's Linux plugins and the flannel plugin, as install-cni holds them. */
const plugins = [
  "bandwidth",
  "bridge",
  "dhcp",
  "dummy",
  "firewall",
  "flannel",
  "host-device",
  "host-local",
  "ipvlan",
  "loopback",
  "macvlan",
  "portmap",
  "ptp",
  "sbr",
  "static",
  "tap",
  "tuning",
  "vlan",
  "vrf",
];

/** The cni-conf.json of Talos's kube-flannel-cfg ConfigMap. */
const cniConf = `{
  "name": "cbr0",
  "cniVersion": "1.0.0",
  "plugins": [
    {
      "type": "flannel",
      "delegate": {
        "hairpinMode": true,
        "isDefaultGateway": true
      }
    },
    {
      "type": "portmap",
      "capabilities": {
        "portMappings": true
      }
    }
  ]
}
`;

/** Unpacks an image's amd64 layers, in order, into a fresh directory. */
async function unpack(name: keyof typeof images): Promise<string> {
  const top = layout.images.find((d) => d.annotations?.[refNameAnnotation] === images[name].reference);
  assert.ok(top, `the archive names ${images[name].reference}`);
  const index = parseManifest(await layout.json(top));
  assert.ok(index.kind === "index");
  const manifest = parseManifest(await layout.json(index.manifests[0]!));
  assert.ok(manifest.kind === "manifest");
  const root = fs.mkdtempSync(path.join(work, `${name}-`));
  for (const layer of manifest.layers) {
    const file = path.join(work, `${layer.digest.slice(7)}.tar.gz`);
    fs.writeFileSync(file, await layout.json(layer));
    await run("tar", ["-xzf", file, "-C", root]);
  }
  return root;
}

describe("the flannel and install-cni images", { skip: !canRun && "docker-registry, Go or root is missing" }, () => {
  before(
    async () => {
      registry = await startRegistry(path.join(work, "registry"), { plain: true });
      await run(
        "bash",
        [
          "scripts/k8s-images.sh",
          "--push",
          registry.host,
          "--arch",
          "amd64",
          "--only",
          "flannel,install-cni",
          "--insecure",
        ],
        { cwd: repo, maxBuffer: 64 * 1024 * 1024 },
      );
      layout = await LayoutArchive.open(path.join(repo, "_out/k8s/images.tar"));
    },
    { timeout: 60 * 60 * 1000 },
  );
  after(async () => {
    await registry?.stop();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it("pushes both under the repository paths Talos pulls them from, as the archive holds them", async () => {
    const [endpoint] = registryEndpoints(
      { mirrors: { [registry.host]: { endpoints: [`http://${registry.host}`] } } },
      registry.host,
    );
    for (const want of Object.values(images)) {
      const top = layout.images.find((d) => d.annotations?.[refNameAnnotation] === want.reference);
      assert.ok(top, `the archive names ${want.reference}`);
      const pushed = await new RepositoryClient(endpoint!, want.repository).manifest(want.tag);
      assert.equal(pushed.digest, top.digest);
    }
  });

  it("install-cni's /install-cni.sh copies every plugin to /host/opt/cni/bin byte for byte", async () => {
    const root = await unpack("install-cni");
    assert.deepEqual(fs.readdirSync(path.join(root, "opt/cni/bin")).sort(), plugins);
    await run("chroot", [root, "/install-cni.sh"]);
    assert.deepEqual(fs.readdirSync(path.join(root, "host/opt/cni/bin")).sort(), plugins);
    for (const p of plugins) {
      const installed = path.join(root, "host/opt/cni/bin", p);
      assert.ok(fs.readFileSync(installed).equals(fs.readFileSync(path.join(root, "opt/cni/bin", p))), p);
      assert.equal(fs.statSync(installed).mode & 0o777, 0o755, p);
    }
    // Run again over the installed plugins, as on every restart of the DaemonSet's pod.
    await run("chroot", [root, "/install-cni.sh"]);
    assert.deepEqual(fs.readdirSync(path.join(root, "host/opt/cni/bin")).sort(), plugins);
    const { stderr } = await run(path.join(root, "host/opt/cni/bin/bridge"), [], { env: {} });
    assert.equal(stderr.split("\n")[0], "CNI bridge plugin v1.4.1");
  });

  it("flannel's init container copies the CNI configuration with the image's cp, and flanneld runs", async () => {
    const root = await unpack("flannel");
    fs.mkdirSync(path.join(root, "etc/kube-flannel"), { recursive: true });
    fs.mkdirSync(path.join(root, "etc/cni/net.d"), { recursive: true });
    fs.writeFileSync(path.join(root, "etc/kube-flannel/cni-conf.json"), cniConf);
    await run("chroot", [root, "cp", "-f", "/etc/kube-flannel/cni-conf.json", "/etc/cni/net.d/10-flannel.conflist"], {
      env: { PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" },
    });
    assert.equal(fs.readFileSync(path.join(root, "etc/cni/net.d/10-flannel.conflist"), "utf8"), cniConf);
    const flanneld = await run("chroot", [root, "/opt/bin/flanneld", "--version"]);
    assert.equal(`${flanneld.stdout}${flanneld.stderr}`.trim(), "v0.25.6");
    const iptables = await run("chroot", [root, "/usr/sbin/iptables", "--version"]);
    assert.equal(iptables.stdout.trim(), "iptables v1.8.9 (nf_tables)");
  });

  describe("the flannel CNI plugin", () => {
    let plugin: string;
    const dir = path.join(work, "flannel-plugin");
    const delegateLog = path.join(dir, "delegate.log");
    // What the stand-in bridge answers ADD with, in CNI 1.0.0's form.
    const result = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "cni0" }],
      ips: [{ address: "10.244.1.2/24", gateway: "10.244.1.1", interface: 0 }],
    };

    before(async () => {
      plugin = path.join(await unpack("install-cni"), "opt/cni/bin/flannel");
      fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
      fs.writeFileSync(
        path.join(dir, "subnet.env"),
        "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n",
      );
      fs.writeFileSync(
        path.join(dir, "bin/bridge"),
        `#!/bin/sh\n{ echo "$CNI_COMMAND $CNI_CONTAINERID"; cat; echo; } >> ${delegateLog}\n[ "$CNI_COMMAND" = ADD ] && echo '${JSON.stringify(result)}'\nexit 0\n`,
        { mode: 0o755 },
      );
    });

    // The flannel entry of the conflist as libcni hands it to the plugin: the network's name and version added.
    const netConf = (subnetFile: string) =>
      JSON.stringify({
        cniVersion: "1.0.0",
        name: "cbr0",
        type: "flannel",
        subnetFile,
        dataDir: path.join(dir, "data"),
        delegate: { hairpinMode: true, isDefaultGateway: true },
      });
    const invoke = (command: string, containerID: string, stdin: string) =>
      spawnSync(plugin, [], {
        input: stdin,
        encoding: "utf8",
        env: {
          CNI_COMMAND: command,
          CNI_CONTAINERID: containerID,
          CNI_NETNS: "/proc/self/ns/net",
          CNI_IFNAME: "eth0",
          CNI_PATH: path.join(dir, "bin"),
        },
      });

    it("ADD hands bridge the subnet's configuration, keeps it, and answers with bridge's result", () => {
      const add = invoke("ADD", "c1", netConf(path.join(dir, "subnet.env")));
      assert.equal(add.status, 0, add.stderr);
      // Re-encoded by the CNI library as its 1.0.0 result type, which always has dns.
      assert.deepEqual(JSON.parse(add.stdout), { ...result, dns: {} });
      const delegated = JSON.parse(fs.readFileSync(path.join(dir, "data/c1"), "utf8"));
      assert.deepEqual(delegated, {
        cniVersion: "1.0.0",
        hairpinMode: true,
        ipMasq: false,
        ipam: { ranges: [[{ subnet: "10.244.1.0/24" }]], routes: [{ dst: "10.244.0.0/16" }], type: "host-local" },
        isDefaultGateway: true,
        isGateway: true,
        mtu: 1450,
        name: "cbr0",
        type: "bridge",
      });
      assert.equal(fs.statSync(path.join(dir, "data/c1")).mode & 0o777, 0o600);
      assert.equal(
        fs.readFileSync(delegateLog, "utf8"),
        `ADD c1\n${fs.readFileSync(path.join(dir, "data/c1"), "utf8")}\n`,
      );
    });

    it("DEL hands bridge what ADD did and forgets it; a second DEL has nothing to undo", () => {
      const saved = fs.readFileSync(path.join(dir, "data/c1"), "utf8");
      fs.writeFileSync(delegateLog, "");
      const del = invoke("DEL", "c1", netConf(path.join(dir, "subnet.env")));
      assert.equal(del.status, 0, del.stderr);
      assert.equal(fs.readFileSync(delegateLog, "utf8"), `DEL c1\n${saved}\n`);
      assert.equal(fs.existsSync(path.join(dir, "data/c1")), false);
      const again = invoke("DEL", "c1", netConf(path.join(dir, "subnet.env")));
      assert.equal(again.status, 0, again.stderr);
      assert.equal(fs.readFileSync(delegateLog, "utf8"), `DEL c1\n${saved}\n`);
    });

    it("refuses ADD when the subnet file lacks a key flanneld writes, naming it", () => {
      const partial = path.join(dir, "partial.env");
      fs.writeFileSync(partial, "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_IPMASQ=true\n");
      const add = invoke("ADD", "c2", netConf(partial));
      assert.notEqual(add.status, 0);
      assert.equal(JSON.parse(add.stdout).msg, `flannel: ${partial} is missing FLANNEL_MTU`);
      assert.equal(fs.existsSync(path.join(dir, "data/c2")), false);
    });
  });
});
