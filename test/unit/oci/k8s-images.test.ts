// Image assembly: tar symlinks and capabilities read back as written, gzipped layers whose
// diff id is the uncompressed tar's digest, indexes with one manifest per platform, and the
// Kubernetes catalog built from small stand-in inputs, named as Talos pulls the images.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { assembleIndex, buildLayer } from "../../../agent/src/oci/image.js";
import {
  bundleFiles,
  buildKubernetesImages,
  kubernetesImages,
  netBindServiceCapability,
  parentDirs,
  programEntries,
  selectImages,
} from "../../../agent/src/oci/k8s-images.js";
import { InvalidInputError } from "../../../agent/src/errors.js";
import { LayoutArchive, writeLayoutArchive } from "../../../agent/src/oci/layout.js";
import { MediaType, parseManifest } from "../../../agent/src/oci/manifest.js";
import { listTar, readMember, writeTar } from "../../../agent/src/oci/tar.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const work = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-k8s-images-"));
const sha = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

after(() => fs.rmSync(work, { recursive: true, force: true }));

describe("tar entries beyond files and directories", () => {
  it("writes symlinks and extended attributes that read back byte for byte", async () => {
    const file = path.join(work, "links.tar");
    const binary = Buffer.from([0, 1, 2, 0x0a, 0x3d, 0xff]);
    await writeTar(file, [
      { name: "usr" },
      { name: "usr/sbin/iptables", link: "iptables-nft" },
      {
        name: "coredns",
        content: binary,
        mode: 0o755,
        xattrs: { "security.capability": netBindServiceCapability, "user.note": Buffer.from("a=b\nc") },
      },
      { name: "tmp", mode: 0o1777 },
    ]);
    const members = await listTar(file);
    assert.deepEqual(
      members.map((m) => [m.name, m.type, m.mode]),
      [
        ["usr", "directory", 0o755],
        ["usr/sbin/iptables", "symlink", 0o777],
        ["coredns", "file", 0o755],
        ["tmp", "directory", 0o1777],
      ],
    );
    assert.equal(members[1]!.link, "iptables-nft");
    assert.ok(members[2]!.xattrs?.["security.capability"]?.equals(netBindServiceCapability));
    assert.ok(members[2]!.xattrs?.["user.note"]?.equals(Buffer.from("a=b\nc")));
    assert.ok((await readMember(file, members[2]!)).equals(binary));
    // The pax record belongs to the entry after it only.
    assert.equal(members[3]!.xattrs, undefined);
  });

  it("grants exactly cap_net_bind_service (bit 10), permitted and effective", () => {
    assert.equal(netBindServiceCapability.readUInt32LE(0), 0x02000001);
    assert.equal(netBindServiceCapability.readUInt32LE(4), 1 << 10);
    assert.equal(
      netBindServiceCapability.subarray(8).every((b) => b === 0),
      true,
    );
  });
});

describe("layers and indexes", () => {
  it("gzips a layer, naming the uncompressed tar's digest as its diff id, the same on a rebuild", async () => {
    const entries = [{ name: "pause", content: Buffer.from("pause binary"), mode: 0o755 }];
    const a = await buildLayer(path.join(work, "a.layer"), entries, { gzip: true });
    const b = await buildLayer(path.join(work, "b.layer"), entries, { gzip: true });
    const gz = fs.readFileSync(path.join(work, "a.layer"));
    assert.equal(a.blob.descriptor.mediaType, MediaType.ociLayerGzip);
    assert.equal(a.blob.descriptor.digest, sha(gz));
    assert.equal(a.blob.descriptor.size, gz.length);
    assert.equal(a.diffId, sha(gunzipSync(gz)));
    assert.equal(b.blob.descriptor.digest, a.blob.descriptor.digest);
    assert.equal(fs.existsSync(path.join(work, "a.layer.tar")), false);
  });

  it("puts one linux manifest per platform under the index, configs naming their layers' diff ids in order", async () => {
    const one = await buildLayer(path.join(work, "one.layer"), [{ name: "one", content: Buffer.from("1") }], {
      gzip: false,
    });
    const two = await buildLayer(path.join(work, "two.layer"), [{ name: "two", content: Buffer.from("2") }], {
      gzip: true,
    });
    const { index, blobs } = assembleIndex([
      { arch: "amd64", layers: [one, two], config: { Entrypoint: ["/two"], User: "65535:65535" } },
      { arch: "arm64", layers: [two], config: { Cmd: ["/two"] } },
    ]);
    const byDigest = new Map(blobs.map((b) => [b.descriptor.digest, b]));
    const parsed = parseManifest(index.content as Buffer);
    assert.equal(parsed.kind, "index");
    assert.ok(parsed.kind === "index");
    assert.deepEqual(
      parsed.manifests.map((m) => m.platform),
      [
        { architecture: "amd64", os: "linux" },
        { architecture: "arm64", os: "linux" },
      ],
    );
    const manifest = parseManifest(byDigest.get(parsed.manifests[0]!.digest)!.content as Buffer);
    assert.ok(manifest.kind === "manifest");
    assert.deepEqual(
      manifest.layers.map((l) => l.digest),
      [one.blob.descriptor.digest, two.blob.descriptor.digest],
    );
    const config = JSON.parse((byDigest.get(manifest.config.digest)!.content as Buffer).toString());
    assert.deepEqual(config, {
      architecture: "amd64",
      os: "linux",
      config: { Entrypoint: ["/two"], User: "65535:65535" },
      rootfs: { type: "layers", diff_ids: [one.diffId, two.diffId] },
    });
  });
});

describe("the Kubernetes image catalog", () => {
  it("names the images as Talos v1.7.6 pulls them", () => {
    const expected = fs
      .readFileSync(path.join(repo, "test/fixtures/k8s-images.txt"), "utf8")
      .split("\n")
      .filter((l) => l && !l.startsWith("#"));
    assert.deepEqual(
      kubernetesImages.map((i) => i.reference),
      expected,
    );
  });

  it("selects by program name, test images only when named, and refuses an unknown one", () => {
    assert.deepEqual(
      selectImages(["pause", "etcd"]).map((i) => i.name),
      ["etcd", "pause"],
    );
    assert.deepEqual(
      selectImages([]).map((i) => i.name),
      kubernetesImages.map((i) => i.name),
      "test images only on request",
    );
    assert.deepEqual(
      selectImages(["echo"]).map((i) => i.reference),
      ["registry.basalt.test/echo:v1"],
    );
    assert.throws(() => selectImages(["etcd", "kube-dns"]), /unknown image kube-dns/);
  });

  it("puts each program where Talos and its manifests exec it, with its parents and upstream's capability", () => {
    assert.deepEqual(parentDirs("usr/local/bin/etcd"), ["usr", "usr/local", "usr/local/bin"]);
    const etcd = programEntries(selectImages(["etcd"])[0]!, { etcd: "/bin/etcd", etcdutl: "/bin/etcdutl" });
    // etcdutl beside etcd, as upstream's etcd image has it (a restore runs it from the image).
    assert.deepEqual(
      etcd.map((e) => [e.name, e.content, e.mode, e.xattrs]),
      [
        ...["usr", "usr/local", "usr/local/bin", "var", "var/etcd", "var/lib", "var/lib/etcd"].map((d) => [
          d,
          undefined,
          undefined,
          undefined,
        ]),
        ["usr/local/bin/etcd", { file: "/bin/etcd" }, 0o755, undefined],
        ["usr/local/bin/etcdutl", { file: "/bin/etcdutl" }, 0o755, undefined],
      ],
    );
    assert.throws(
      () => programEntries(selectImages(["etcd"])[0]!, { etcd: "/bin/etcd" }),
      /^InvalidInputError: no input for etcdutl of the etcd image$/,
    );
    const coredns = programEntries(selectImages(["coredns"])[0]!, { coredns: "/bin/true" });
    assert.deepEqual(
      coredns.map((e) => [e.name, e.mode]),
      [["coredns", 0o755]],
    );
    assert.ok(coredns[0]!.xattrs?.["security.capability"]?.equals(netBindServiceCapability));
    const paths = Object.fromEntries(kubernetesImages.map((i) => [i.name, i.binaryPath]));
    for (const name of ["kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "etcd"])
      assert.equal(paths[name], `/usr/local/bin/${name}`);
  });

  it("puts flanneld where flannel's DaemonSet execs it, and install-cni's script at / with its plugins in /opt/cni/bin", () => {
    const flannel = programEntries(selectImages(["flannel"])[0]!, { flannel: "/bin/true" });
    assert.deepEqual(
      flannel.map((e) => [e.name, e.mode]),
      [
        ["opt", undefined],
        ["opt/bin", undefined],
        ["opt/bin/flanneld", 0o755],
      ],
    );
    assert.deepEqual(selectImages(["flannel"])[0]!.config, {
      Entrypoint: ["/opt/bin/flanneld"],
      Env: [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
      ],
    });
    const installCNI = programEntries(selectImages(["install-cni"])[0]!, { "install-cni": "/in/install-cni" }, [
      "/in/cni-plugins/portmap",
      "/in/cni-plugins/bridge",
    ]);
    assert.deepEqual(
      installCNI.map((e) => [e.name, e.mode, e.content]),
      [
        ["opt", undefined, undefined],
        ["opt/cni", undefined, undefined],
        ["opt/cni/bin", undefined, undefined],
        ["install-cni.sh", 0o755, { file: "/in/install-cni" }],
        ["opt/cni/bin/bridge", 0o755, { file: "/in/cni-plugins/bridge" }],
        ["opt/cni/bin/portmap", 0o755, { file: "/in/cni-plugins/portmap" }],
      ],
    );
  });

  it("takes a bundle's files in name order and refuses anything else in its directory", async () => {
    const dir = path.join(work, "bundle");
    fs.mkdirSync(path.join(dir, "nested"), { recursive: true });
    for (const n of ["tuning", "bridge"]) fs.writeFileSync(path.join(dir, n), n);
    await assert.rejects(
      bundleFiles(dir),
      (err) =>
        err instanceof InvalidInputError && err.message === `${path.join(dir, "nested")}: a bundle holds only files`,
    );
    fs.rmdirSync(path.join(dir, "nested"));
    assert.deepEqual(await bundleFiles(dir), [path.join(dir, "bridge"), path.join(dir, "tuning")]);
  });

  it("builds multi-arch images from the inputs, sharing the base and Debian layers, into a layout archive", async () => {
    const inputs = path.join(work, "inputs");
    fs.mkdirSync(inputs);
    fs.writeFileSync(path.join(inputs, "ca-certificates.crt"), "-----BEGIN CERTIFICATE-----\n");
    for (const arch of ["amd64", "arm64"]) {
      fs.mkdirSync(path.join(inputs, arch, "debian/kube-proxy/usr/sbin"), { recursive: true });
      fs.writeFileSync(path.join(inputs, arch, "debian/kube-proxy/usr/sbin/xtables-nft-multi"), `xtables ${arch}`, {
        mode: 0o755,
      });
      fs.symlinkSync("xtables-nft-multi", path.join(inputs, arch, "debian/kube-proxy/usr/sbin/iptables"));
      for (const name of ["pause", "kube-proxy"])
        fs.writeFileSync(path.join(inputs, arch, name), `${name} for ${arch}`);
    }
    const built = await buildKubernetesImages(inputs, path.join(work, "build"), selectImages(["kube-proxy", "pause"]), [
      "amd64",
      "arm64",
    ]);
    assert.deepEqual(
      built.images.map((i) => i.refName),
      ["registry.k8s.io/kube-proxy:v1.30.3", "registry.k8s.io/pause:3.8"],
    );
    const archive = path.join(work, "images.tar");
    await writeLayoutArchive(archive, built.images, built.blobs);
    const layout = await LayoutArchive.open(archive);
    const layersOf = async (refName: string, arch: number) => {
      const top = layout.images.find((d) => d.annotations?.["org.opencontainers.image.ref.name"] === refName)!;
      const index = parseManifest(await layout.json(top));
      assert.ok(index.kind === "index");
      const manifest = parseManifest(await layout.json(index.manifests[arch]!));
      assert.ok(manifest.kind === "manifest");
      return manifest.layers;
    };
    const proxyAmd64 = await layersOf("registry.k8s.io/kube-proxy:v1.30.3", 0);
    const proxyArm64 = await layersOf("registry.k8s.io/kube-proxy:v1.30.3", 1);
    const pauseAmd64 = await layersOf("registry.k8s.io/pause:3.8", 0);
    assert.equal(proxyAmd64.length, 3);
    assert.equal(pauseAmd64.length, 2);
    // One base layer for every image and architecture; the Debian layer differs per architecture.
    assert.equal(proxyAmd64[0]!.digest, pauseAmd64[0]!.digest);
    assert.equal(proxyArm64[0]!.digest, pauseAmd64[0]!.digest);
    assert.notEqual(proxyAmd64[1]!.digest, proxyArm64[1]!.digest);
    const members = async (layer: (typeof proxyAmd64)[number]) => {
      const tar = path.join(work, `${layer.digest.slice(7, 19)}.tar`);
      fs.writeFileSync(tar, gunzipSync(await layout.json(layer)));
      return Promise.all(
        (await listTar(tar)).map(async (m) => [
          m.name,
          m.type,
          m.link ?? (m.type === "file" ? (await readMember(tar, m)).toString() : ""),
        ]),
      );
    };
    assert.deepEqual(await members(proxyArm64[1]!), [
      ["usr", "directory", ""],
      ["usr/sbin", "directory", ""],
      ["usr/sbin/iptables", "symlink", "xtables-nft-multi"],
      ["usr/sbin/xtables-nft-multi", "file", "xtables arm64"],
    ]);
    assert.deepEqual(await members(pauseAmd64[1]!), [["pause", "file", "pause for amd64"]]);
    const base = (await members(pauseAmd64[0]!)).map(([name]) => name);
    assert.deepEqual(base, [
      "etc",
      "etc/passwd",
      "etc/group",
      "etc/nsswitch.conf",
      "etc/ssl",
      "etc/ssl/certs",
      "etc/ssl/certs/ca-certificates.crt",
      "home",
      "home/nonroot",
      "tmp",
    ]);
  });

  it("builds install-cni from its script, its Debian tree and its plugins, per architecture", async () => {
    const inputs = path.join(work, "cni-inputs");
    fs.mkdirSync(inputs);
    fs.writeFileSync(path.join(inputs, "ca-certificates.crt"), "-----BEGIN CERTIFICATE-----\n");
    for (const arch of ["amd64", "arm64"]) {
      fs.mkdirSync(path.join(inputs, arch, "debian/install-cni/bin"), { recursive: true });
      fs.writeFileSync(path.join(inputs, arch, "debian/install-cni/bin/dash"), `dash ${arch}`, { mode: 0o755 });
      fs.symlinkSync("dash", path.join(inputs, arch, "debian/install-cni/bin/sh"));
      fs.writeFileSync(path.join(inputs, arch, "install-cni"), "#!/bin/sh\n", { mode: 0o755 });
      fs.mkdirSync(path.join(inputs, arch, "cni-plugins"));
      for (const plugin of ["portmap", "flannel", "bridge"])
        fs.writeFileSync(path.join(inputs, arch, "cni-plugins", plugin), `${plugin} for ${arch}`);
    }
    const built = await buildKubernetesImages(inputs, path.join(work, "cni-build"), selectImages(["install-cni"]), [
      "amd64",
      "arm64",
    ]);
    assert.deepEqual(
      built.images.map((i) => i.refName),
      ["ghcr.io/siderolabs/install-cni:v1.7.0-2-g7c627a8"],
    );
    const archive = path.join(work, "cni-images.tar");
    await writeLayoutArchive(archive, built.images, built.blobs);
    const layout = await LayoutArchive.open(archive);
    const index = parseManifest(await layout.json(layout.images[0]!));
    assert.ok(index.kind === "index");
    const arm64 = parseManifest(await layout.json(index.manifests[1]!));
    assert.ok(arm64.kind === "manifest");
    assert.equal(arm64.layers.length, 3);
    const config = JSON.parse((await layout.json(arm64.config)).toString());
    assert.deepEqual(config.config, {
      Cmd: ["/install-cni.sh"],
      Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
    });
    const members = async (layer: (typeof arm64.layers)[number]) => {
      const tar = path.join(work, `cni-${layer.digest.slice(7, 19)}.tar`);
      fs.writeFileSync(tar, gunzipSync(await layout.json(layer)));
      return Promise.all(
        (await listTar(tar)).map(async (m) => [
          m.name,
          m.type,
          m.mode,
          m.link ?? (m.type === "file" ? (await readMember(tar, m)).toString() : ""),
        ]),
      );
    };
    assert.deepEqual(await members(arm64.layers[1]!), [
      ["bin", "directory", 0o755, ""],
      ["bin/dash", "file", 0o755, "dash arm64"],
      ["bin/sh", "symlink", 0o777, "dash"],
    ]);
    assert.deepEqual(await members(arm64.layers[2]!), [
      ["opt", "directory", 0o755, ""],
      ["opt/cni", "directory", 0o755, ""],
      ["opt/cni/bin", "directory", 0o755, ""],
      ["install-cni.sh", "file", 0o755, "#!/bin/sh\n"],
      ["opt/cni/bin/bridge", "file", 0o755, "bridge for arm64"],
      ["opt/cni/bin/flannel", "file", 0o755, "flannel for arm64"],
      ["opt/cni/bin/portmap", "file", 0o755, "portmap for arm64"],
    ]);
  });

  it("names a missing bundle as the input it is", async () => {
    const inputs = path.join(work, "cni-missing");
    fs.mkdirSync(path.join(inputs, "amd64"), { recursive: true });
    fs.writeFileSync(path.join(inputs, "ca-certificates.crt"), "");
    fs.mkdirSync(path.join(inputs, "amd64/debian/install-cni"), { recursive: true });
    fs.writeFileSync(path.join(inputs, "amd64/install-cni"), "#!/bin/sh\n");
    await assert.rejects(
      buildKubernetesImages(inputs, path.join(work, "cni-missing-build"), selectImages(["install-cni"]), ["amd64"]),
      (err) =>
        err instanceof InvalidInputError &&
        err.message === `the cni-plugins of install-cni (amd64) is missing: ${path.join(inputs, "amd64/cni-plugins")}`,
    );
  });

  it("builds the etcd image with etcd and etcdutl from their inputs in its own layer, and refuses a missing etcdutl", async () => {
    const inputs = path.join(work, "etcd-inputs");
    fs.mkdirSync(path.join(inputs, "amd64"), { recursive: true });
    fs.writeFileSync(path.join(inputs, "ca-certificates.crt"), "-----BEGIN CERTIFICATE-----\n");
    fs.writeFileSync(path.join(inputs, "amd64", "etcd"), "etcd for amd64");
    await assert.rejects(
      buildKubernetesImages(inputs, path.join(work, "etcd-build"), selectImages(["etcd"]), ["amd64"]),
      /^InvalidInputError: etcdutl for amd64 is missing: .*\/amd64\/etcdutl$/,
    );
    fs.writeFileSync(path.join(inputs, "amd64", "etcdutl"), "etcdutl for amd64");
    const built = await buildKubernetesImages(inputs, path.join(work, "etcd-build"), selectImages(["etcd"]), ["amd64"]);
    assert.deepEqual(
      built.images.map((i) => i.refName),
      ["gcr.io/etcd-development/etcd:v3.5.13"],
    );
    const byDigest = new Map(built.blobs.map((b) => [b.descriptor.digest, b]));
    const index = parseManifest(byDigest.get(built.images[0]!.top.digest)!.content as Buffer);
    assert.ok(index.kind === "index");
    const manifest = parseManifest(byDigest.get(index.manifests[0]!.digest)!.content as Buffer);
    assert.ok(manifest.kind === "manifest");
    assert.equal(manifest.layers.length, 2);
    const tar = path.join(work, "etcd-layer.tar");
    fs.writeFileSync(tar, gunzipSync(fs.readFileSync(path.join(work, "etcd-build", "etcd-amd64.layer"))));
    const files = await Promise.all(
      (await listTar(tar))
        .filter((m) => m.type === "file")
        .map(async (m) => [m.name, m.mode, (await readMember(tar, m)).toString()]),
    );
    assert.deepEqual(files, [
      ["usr/local/bin/etcd", 0o755, "etcd for amd64"],
      ["usr/local/bin/etcdutl", 0o755, "etcdutl for amd64"],
    ]);
    assert.equal(manifest.layers[1]!.digest, sha(fs.readFileSync(path.join(work, "etcd-build", "etcd-amd64.layer"))));
  });
});
