// The images a Kubernetes cluster of Basalt nodes pulls, named as Talos v1.7.6's
// `talosctl image default` lists them (pkg/machinery/constants: the kubelet, control
// plane, kube-proxy, etcd and CoreDNS images and versions; the pause tag is the
// sandbox image the cri service configures, as Talos's containerd 1.7 names it; pkg/images/list.go:
// flannel and the install-cni image of its default CNI), assembled from binaries built
// here and files unpacked from Debian's packages.
//
// Inputs, per architecture, under one directory: <arch>/<program> for each program an image holds
// (scripts/go-component.sh, images/pause/build.sh), <arch>/<bundle>/ (a directory of programs,
// scripts/go-component.sh), <arch>/debian/<tree>/ (images/debian-tree.sh) and the CA bundle
// ca-certificates.crt beside the architectures.

import { promises as fs } from "node:fs";
import path from "node:path";
import { InvalidInputError } from "../errors.js";
import { assembleIndex, buildLayer, type BuiltLayer, type PlatformImage, type RuntimeConfig } from "./image.js";
import type { LayoutBlob, LayoutImage } from "./layout.js";
import type { TarInput } from "./tar.js";

export const kubernetesVersion = "v1.30.3";
export const etcdVersion = "v3.5.13";
export const coreDNSVersion = "v1.11.1";
export const pauseVersion = "3.8";
/** Talos's constants.FlannelVersion; the image holds flanneld v0.25.6 (see images/flannel/go.mod). */
export const flannelVersion = "v0.25.3";
/** version.ExtrasVersion of Talos v1.7.6: the siderolabs/extras build its install-cni image comes from. */
export const installCNIVersion = "v1.7.0-2-g7c627a8";

export type ImageArch = "amd64" | "arm64";
export const imageArchs: readonly ImageArch[] = ["amd64", "arm64"];

/** security.capability granting cap_net_bind_service, permitted and effective (struct vfs_cap_data, revision 2). */
export const netBindServiceCapability = Buffer.from([
  0x01, 0, 0, 0x02, 0x00, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
]);

export interface KubernetesImage {
  /** The program's name: its input file and the --only word. */
  name: string;
  /** Where Talos pulls it from. */
  reference: string;
  /** Where the program lives in the image. */
  binaryPath: string;
  /** The image's other programs (input <arch>/<name>), as upstream's image carries them. */
  companions?: { name: string; binaryPath: string }[];
  /** As upstream's image sets it, so a non-root user may bind a port below 1024. */
  bindsLowPorts?: boolean;
  /** A tree of Debian files the program execs at run time (<arch>/debian/<tree>). */
  debianTree?: string;
  /** Directories the image holds empty (upstream's WORKDIRs). */
  dirs?: string[];
  /** More programs, every file of <arch>/<input>/, placed in the directory `path`. */
  bundle?: { input: string; path: string };
  config: RuntimeConfig;
}

const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const certsEnv = "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt";

function controlPlane(name: string): KubernetesImage {
  // Upstream runs these under go-runner, which only redirects logs; Talos's static pods exec the binary itself.
  return {
    name,
    reference: `registry.k8s.io/${name}:${kubernetesVersion}`,
    binaryPath: `/usr/local/bin/${name}`,
    config: { Entrypoint: [`/usr/local/bin/${name}`], Env: [pathEnv, certsEnv] },
  };
}

export const kubernetesImages: readonly KubernetesImage[] = [
  {
    name: "kubelet",
    reference: `ghcr.io/siderolabs/kubelet:${kubernetesVersion}`,
    binaryPath: "/usr/local/bin/kubelet",
    debianTree: "kubelet",
    config: { Entrypoint: ["/usr/local/bin/kubelet"], Env: [pathEnv, certsEnv] },
  },
  { ...controlPlane("kube-apiserver"), bindsLowPorts: true },
  controlPlane("kube-controller-manager"),
  controlPlane("kube-scheduler"),
  { ...controlPlane("kube-proxy"), debianTree: "kube-proxy" },
  {
    name: "etcd",
    reference: `gcr.io/etcd-development/etcd:${etcdVersion}`,
    binaryPath: "/usr/local/bin/etcd",
    // A restore from a snapshot runs etcdutl from this image (a node's root filesystem has none).
    companions: [{ name: "etcdutl", binaryPath: "/usr/local/bin/etcdutl" }],
    dirs: ["var/etcd", "var/lib/etcd"],
    config: {
      Cmd: ["/usr/local/bin/etcd"],
      Env: [pathEnv, certsEnv],
      WorkingDir: "/var/lib/etcd/",
      ExposedPorts: { "2379/tcp": {}, "2380/tcp": {} },
    },
  },
  {
    name: "coredns",
    reference: `registry.k8s.io/coredns/coredns:${coreDNSVersion}`,
    binaryPath: "/coredns",
    bindsLowPorts: true,
    config: {
      Entrypoint: ["/coredns"],
      User: "65532:65532",
      Env: [pathEnv, certsEnv],
      ExposedPorts: { "53/tcp": {}, "53/udp": {} },
    },
  },
  {
    name: "pause",
    reference: `registry.k8s.io/pause:${pauseVersion}`,
    binaryPath: "/pause",
    config: { Entrypoint: ["/pause"], User: "65535:65535", Env: [pathEnv] },
  },
  {
    // As upstream's image: flanneld in /opt/bin; Debian's cp for the init container that installs the CNI
    // configuration, iptables (nft backend) for the masquerade and forward rules flanneld keeps.
    name: "flannel",
    reference: `ghcr.io/siderolabs/flannel:${flannelVersion}`,
    binaryPath: "/opt/bin/flanneld",
    debianTree: "flannel",
    config: { Entrypoint: ["/opt/bin/flanneld"], Env: [pathEnv, certsEnv] },
  },
  {
    // The flannel DaemonSet's init container runs /install-cni.sh, which copies the CNI plugins to the
    // host's /opt/cni/bin, mounted at /host/opt/cni/bin; Debian's sh and cp run it.
    name: "install-cni",
    reference: `ghcr.io/siderolabs/install-cni:${installCNIVersion}`,
    binaryPath: "/install-cni.sh",
    debianTree: "install-cni",
    bundle: { input: "cni-plugins", path: "/opt/cni/bin" },
    config: { Cmd: ["/install-cni.sh"], Env: [pathEnv] },
  },
];

/**
 * Images the project's tests run as pods, built on request only (`--only echo`): a cluster needs none
 * of them. Named under the reserved .test domain, which a test's registry mirror serves.
 */
export const testImages: readonly KubernetesImage[] = [
  {
    name: "echo",
    reference: "registry.basalt.test/echo:v1",
    binaryPath: "/echo",
    config: { Entrypoint: ["/echo"], User: "65532:65532", Env: [pathEnv] },
  },
];

/** The images named in `only` (every Kubernetes image when empty), in catalog order; an unknown name is refused. */
export function selectImages(only: string[]): KubernetesImage[] {
  const catalog = [...kubernetesImages, ...testImages];
  const unknown = only.filter((n) => !catalog.some((i) => i.name === n));
  if (unknown.length > 0)
    throw new InvalidInputError(
      `unknown image ${unknown.join(", ")} (known: ${catalog.map((i) => i.name).join(", ")})`,
    );
  return only.length === 0 ? [...kubernetesImages] : catalog.filter((i) => only.includes(i.name));
}

/** The parents of a path inside an image, outermost first ("usr/local/bin/x" -> usr, usr/local, usr/local/bin). */
export function parentDirs(rel: string): string[] {
  const parts = rel.split("/").slice(0, -1);
  return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
}

/** What every image holds first: the users upstream's distroless base names, /tmp and the CA bundle. */
export function baseEntries(caBundle: string): TarInput[] {
  const passwd =
    "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n";
  const group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n";
  return [
    { name: "etc" },
    { name: "etc/passwd", content: Buffer.from(passwd) },
    { name: "etc/group", content: Buffer.from(group) },
    { name: "etc/nsswitch.conf", content: Buffer.from("hosts: files dns\n") },
    { name: "etc/ssl" },
    { name: "etc/ssl/certs" },
    { name: "etc/ssl/certs/ca-certificates.crt", content: { file: caBundle } },
    { name: "home" },
    { name: "home/nonroot", mode: 0o700 },
    { name: "tmp", mode: 0o1777 },
  ];
}

/** The programs an image holds, by input name: its own first, then its companions. */
export function imagePrograms(image: KubernetesImage): { name: string; binaryPath: string }[] {
  return [{ name: image.name, binaryPath: image.binaryPath }, ...(image.companions ?? [])];
}

/**
 * The image's own layer: its directories and its programs (`binaries`: input name -> file), with the
 * capability upstream's image gives its program, and its bundle's programs (`bundled`: files, placed in
 * the bundle's directory by their names).
 */
export function programEntries(
  image: KubernetesImage,
  binaries: Record<string, string>,
  bundled: readonly string[] = [],
): TarInput[] {
  const files: TarInput[] = [];
  for (const p of imagePrograms(image)) {
    const file = binaries[p.name];
    if (file === undefined) throw new InvalidInputError(`no input for ${p.name} of the ${image.name} image`);
    const lowPorts = p.name === image.name && image.bindsLowPorts;
    files.push({
      name: p.binaryPath.replace(/^\//, ""),
      content: { file },
      mode: 0o755,
      ...(lowPorts ? { xattrs: { "security.capability": netBindServiceCapability } } : {}),
    });
  }
  const bundleDir = image.bundle?.path.replace(/^\//, "");
  for (const file of bundled)
    files.push({ name: `${bundleDir}/${path.basename(file)}`, content: { file }, mode: 0o755 });
  const declared = [...(image.dirs ?? []), ...(bundleDir ? [bundleDir] : [])];
  const dirs = new Set([
    ...files.flatMap((f) => parentDirs(f.name)),
    ...declared.flatMap((d) => [...parentDirs(d), d]),
  ]);
  return [
    ...[...dirs].sort().map((name) => ({ name })),
    ...files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  ];
}

/** The files of a bundle's input directory, by full path; a bundle holds programs only. */
export async function bundleFiles(dir: string): Promise<string[]> {
  const names = (await fs.readdir(dir)).sort();
  for (const n of names) {
    if (!(await fs.lstat(path.join(dir, n))).isFile())
      throw new InvalidInputError(`${path.join(dir, n)}: a bundle holds only files`, { file: path.join(dir, n) });
  }
  return names.map((n) => path.join(dir, n));
}

/** A directory tree as tar entries (directories, files and symlinks, modes kept), in sorted order. */
export async function treeEntries(root: string, rel = ""): Promise<TarInput[]> {
  const entries: TarInput[] = [];
  const names = (await fs.readdir(path.join(root, rel))).sort();
  for (const n of names) {
    const name = rel ? `${rel}/${n}` : n;
    const full = path.join(root, name);
    const st = await fs.lstat(full);
    if (st.isSymbolicLink()) entries.push({ name, link: await fs.readlink(full) });
    else if (st.isDirectory()) entries.push({ name, mode: st.mode & 0o7777 }, ...(await treeEntries(root, name)));
    else if (st.isFile()) entries.push({ name, content: { file: full }, mode: st.mode & 0o7777 });
    else throw new InvalidInputError(`${full}: neither a file, a directory nor a symlink`, { file: full });
  }
  return entries;
}

export interface BuiltImages {
  images: LayoutImage[];
  blobs: LayoutBlob[];
}

/** Builds every image in `images` for every arch in `archs` from `inputs`; layer files go to `work`. */
export async function buildKubernetesImages(
  inputs: string,
  work: string,
  images: readonly KubernetesImage[],
  archs: readonly ImageArch[],
): Promise<BuiltImages> {
  await fs.mkdir(work, { recursive: true });
  const requireInput = async (file: string, what: string) => {
    await fs.access(file).catch((err: unknown) => {
      throw new InvalidInputError(`${what} is missing: ${file}`, { file }, { cause: err });
    });
    return file;
  };
  const caBundle = await requireInput(path.join(inputs, "ca-certificates.crt"), "the CA bundle");
  const base = await buildLayer(path.join(work, "base.layer"), baseEntries(caBundle), { gzip: true });
  const debianLayers = new Map<string, BuiltLayer>();
  const out: BuiltImages = { images: [], blobs: [] };
  for (const image of images) {
    const platforms: PlatformImage[] = [];
    for (const arch of archs) {
      const layers = [base];
      if (image.debianTree) {
        const key = `${arch}/${image.debianTree}`;
        let layer = debianLayers.get(key);
        if (!layer) {
          const tree = await requireInput(
            path.join(inputs, arch, "debian", image.debianTree),
            `the Debian tree for ${image.name} (${arch})`,
          );
          layer = await buildLayer(
            path.join(work, `debian-${image.debianTree}-${arch}.layer`),
            await treeEntries(tree),
            { gzip: true },
          );
          debianLayers.set(key, layer);
        }
        layers.push(layer);
      }
      const binaries: Record<string, string> = {};
      for (const p of imagePrograms(image))
        binaries[p.name] = await requireInput(path.join(inputs, arch, p.name), `${p.name} for ${arch}`);
      const bundled = image.bundle
        ? await bundleFiles(
            await requireInput(
              path.join(inputs, arch, image.bundle.input),
              `the ${image.bundle.input} of ${image.name} (${arch})`,
            ),
          )
        : [];
      layers.push(
        await buildLayer(path.join(work, `${image.name}-${arch}.layer`), programEntries(image, binaries, bundled), {
          gzip: true,
        }),
      );
      platforms.push({ arch, layers, config: image.config });
    }
    const { index, blobs } = assembleIndex(platforms);
    out.images.push({ top: index.descriptor, refName: image.reference });
    out.blobs.push(...blobs);
  }
  return out;
}
