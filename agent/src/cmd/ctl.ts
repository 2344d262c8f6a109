// `basalt ctl`: the client-side command line, a talosctl-like multi-command.
// A command is a path of words mapped to a handler; add talosctl-like calls by
// adding entries to `commands`.
import { callCommands } from "../client/cli.js";
import { InvalidInputError } from "../errors.js";
import { genConfig, genSecrets, type CtlIO } from "./ctl-gen.js";
import { genCA, genCrt, genCSR, genKey, genKeypair } from "./ctl-gen-pki.js";
import { installerBuild, installerPush } from "./ctl-installer.js";
import { k8sImagesBuild, k8sImagesPush } from "./ctl-k8s-images.js";

type Handler = (argv: string[], io: CtlIO) => Promise<void>;

const commands: { path: string[]; usage: string; run: Handler }[] = [
  { path: ["gen", "secrets"], usage: "gen secrets [-o secrets.yaml] [--force]", run: genSecrets },
  {
    path: ["gen", "config"],
    usage:
      "gen config <cluster-name> <https://endpoint:port> [--output-dir D] [--with-secrets F] [--install-disk /dev/sda]\n" +
      "           [--install-image I] [--kubernetes-version V] [--additional-sans a,b] [--dns-domain D] [--force]\n" +
      "           [--config-patch P] [--config-patch-control-plane P] [--config-patch-worker P]   (P: YAML/JSON or @file)\n" +
      "           [--output-types controlplane,worker,talosconfig] [-o DIR | -o FILE|- with one output type]",
    run: genConfig,
  },
  { path: ["gen", "ca"], usage: "gen ca --organization O [--hours 87600] [--rsa]", run: genCA },
  { path: ["gen", "key"], usage: "gen key --name N", run: genKey },
  { path: ["gen", "csr"], usage: "gen csr --key N.key --ip IP [--roles os:admin]", run: genCSR },
  { path: ["gen", "crt"], usage: "gen crt --ca CA --csr N.csr --name N [--hours 24]", run: genCrt },
  { path: ["gen", "keypair"], usage: "gen keypair --organization O [--ip IP]", run: genKeypair },
  {
    path: ["installer", "build"],
    usage: "installer build --output F [--version V] --platform amd64=VMLINUZ,INITRAMFS [--platform arm64=…]",
    run: installerBuild,
  },
  {
    path: ["installer", "push"],
    usage: "installer push ARCHIVE REGISTRY/REPO:TAG [--insecure (plain HTTP)] [--ca F] [--username U --password P]",
    run: installerPush,
  },
  {
    path: ["k8s-images", "build"],
    usage: "k8s-images build --inputs DIR --output F [--arch amd64,arm64] [--only etcd,pause]",
    run: k8sImagesBuild,
  },
  {
    path: ["k8s-images", "push"],
    usage: "k8s-images push ARCHIVE HOST:PORT [--insecure (plain HTTP)] [--ca F] [--username U --password P]",
    run: k8sImagesPush,
  },
  ...callCommands,
];

function usage(): string {
  return "usage: basalt ctl <command>\ncommands:\n" + commands.map((c) => `  ${c.usage}`).join("\n") + "\n";
}

const defaultIO: CtlIO = {
  out: (text) => process.stdout.write(text.endsWith("\n") ? text : text + "\n"),
  log: (line) => process.stderr.write(line + "\n"),
  cwd: () => process.cwd(),
};

export async function main(argv: string[], io: CtlIO = defaultIO): Promise<void> {
  if (argv.length === 0 || argv[0] === "help" || argv[0] === "--help" || argv[0] === "-h") {
    io.out(usage().trimEnd());
    return;
  }
  const command = commands.find((c) => c.path.every((word, i) => argv[i] === word));
  if (!command)
    throw new InvalidInputError(`unknown command ${JSON.stringify(argv.slice(0, 2).join(" "))}\n${usage()}`);
  await command.run(argv.slice(command.path.length), io);
}
