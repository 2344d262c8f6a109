import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { parseBootSlots, renderBootSlots } from "../../../agent/src/storage/bootloader/grub.js";
import { ovaFiles, renderManifest, renderOvf } from "../../../agent/src/storage/ova.js";
import { withCmdline } from "../../../agent/src/storage/platform-disk.js";
import {
  imageFileName,
  platformCmdline,
  platformImages,
  selectPlatformImages,
} from "../../../agent/src/storage/platform-images.js";
import { repoRoot } from "../pki/fixtures.js";

// The metal image's command line as scripts/image.sh gives it (initramfs/cmdline.txt).
const metalCmdline = readFileSync(path.join(repoRoot, "initramfs/cmdline.txt"), "utf8").trim();

interface Expected {
  platform: string;
  file: string;
  diskMiB: number | undefined;
  kernelArgs: string[];
}

function expectedImages(): Expected[] {
  const text = readFileSync(path.join(repoRoot, "test/fixtures/platform-images/images-amd64.tsv"), "utf8");
  return text
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => {
      const [platform, file, disk, args] = l.split("\t") as [string, string, string, string];
      return { platform, file, diskMiB: disk === "-" ? undefined : Number(disk), kernelArgs: args.split(" ") };
    });
}

describe("cloud images", () => {
  it("are the platforms Talos's imager makes, with its file names, disk sizes and each platform's kernel arguments", () => {
    const expected = expectedImages();
    assert.deepEqual(
      Object.keys(platformImages),
      expected.map((e) => e.platform),
    );
    for (const e of expected) {
      const image = platformImages[e.platform]!;
      assert.equal(imageFileName(image, "amd64"), e.file, e.platform);
      assert.equal(image.diskSizeMiB, e.diskMiB, e.platform);
      assert.deepEqual(image.kernelArgs, e.kernelArgs, e.platform);
    }
  });

  it("pack qcow2 with 8 KiB clusters and Azure's VHD as a fixed one of the exact size", () => {
    assert.equal(platformImages["oracle"]!.formatOptions, "cluster_size=8k");
    assert.equal(platformImages["exoscale"]!.formatOptions, "cluster_size=8k");
    assert.equal(platformImages["azure"]!.formatOptions, "subformat=fixed,force_size");
    assert.match(platformImages["vmware"]!.formatOptions, /subformat=streamOptimized/);
  });

  it("name the architecture in the file", () => {
    assert.equal(imageFileName(platformImages["aws"]!, "arm64"), "aws-arm64.raw.xz");
    assert.equal(imageFileName(platformImages["gcp"]!, "arm64"), "gcp-arm64.raw.tar.gz");
  });

  it("boot with talos.platform=<name> and the platform's consoles in place of metal's, the defaults kept", () => {
    assert.match(metalCmdline, /^talos\.platform=metal console=tty0 console=ttyS0 init_on_alloc=1 /);
    const aws = platformCmdline(metalCmdline, platformImages["aws"]!);
    const defaults = metalCmdline.split(" ").slice(3);
    assert.deepEqual(aws.split(" "), [
      "talos.platform=aws",
      "console=tty1",
      "console=ttyS0",
      "net.ifnames=0",
      ...defaults,
    ]);
    const azure = platformCmdline(metalCmdline, platformImages["azure"]!);
    assert.equal(
      azure,
      [
        "talos.platform=azure",
        "console=ttyS0,115200n8",
        "earlyprintk=ttyS0,115200",
        "rootdelay=300",
        "net.ifnames=0",
        "talos.dashboard.disabled=1",
        ...defaults,
      ].join(" "),
    );
    // A second pass over a platform's own line gives the same line (the console settings are not doubled).
    assert.equal(platformCmdline(aws, platformImages["aws"]!), aws);
  });

  it("are chosen by name or all, in the table's order; an unknown name is refused with the known ones", () => {
    assert.deepEqual(
      selectPlatformImages("gcp, aws").map((i) => i.platform),
      ["aws", "gcp"],
    );
    assert.equal(selectPlatformImages("all").length, Object.keys(platformImages).length);
    assert.throws(() => selectPlatformImages("aws,ec2"), /unknown platform image ec2 \(known: akamai, aws,.*, all\)/);
  });
});

describe("a platform's grub.cfg", () => {
  it("has every entry, the reset one too, boot the platform's command line; titles and default unchanged", () => {
    const slots = {
      default: "B" as const,
      fallback: "A" as const,
      entries: { A: { version: "v0.1.0", cmdline: metalCmdline }, B: { version: "v0.2.0", cmdline: metalCmdline } },
    };
    const cmdline = platformCmdline(metalCmdline, platformImages["gcp"]!);
    const text = renderBootSlots(withCmdline(slots, cmdline), true);
    assert.deepEqual(parseBootSlots(text), {
      default: "B",
      fallback: "A",
      entries: { A: { version: "v0.1.0", cmdline }, B: { version: "v0.2.0", cmdline } },
    });
    assert.match(
      text,
      new RegExp(
        `menuentry "Reset[^{]*\\{[^}]*linux /B/vmlinuz ${cmdline.replace(/\./g, "\\.")} talos\\.experimental\\.wipe=`,
      ),
    );
  });
});

describe("the OVA descriptor", () => {
  it("references the VMDK by name and size, as a stream-optimized disk of the given capacity on a SCSI controller", () => {
    const ovf = renderOvf({ fileBytes: 123456, capacityMiB: 8192 });
    assert.match(ovf, /<File ovf:id="file1" ovf:href="disk\.vmdk" ovf:size="123456"\/>/);
    assert.match(
      ovf,
      /<Disk ovf:diskId="vmdisk1" ovf:fileRef="file1" ovf:capacity="8192" ovf:capacityAllocationUnits="byte \* 2\^20" ovf:format="http:\/\/www\.vmware\.com\/interfaces\/specifications\/vmdk\.html#streamOptimized"\/>/,
    );
    assert.match(
      ovf,
      /<rasd:HostResource>ovf:\/disk\/vmdisk1<\/rasd:HostResource>\n\s*<rasd:InstanceID>4<\/rasd:InstanceID>\n\s*<rasd:Parent>3<\/rasd:Parent>/,
    );
    assert.match(
      ovf,
      /<rasd:InstanceID>3<\/rasd:InstanceID>\n\s*<rasd:ResourceSubType>VirtualSCSI<\/rasd:ResourceSubType>\n\s*<rasd:ResourceType>6<\/rasd:ResourceType>/,
    );
    assert.match(ovf, /ovf:transport="com\.vmware\.guestInfo"/);
    assert.match(ovf, /<Property ovf:key="talos\.config"/);
  });

  it("has a manifest line per file, as OpenSSL's dgst writes it", () => {
    assert.equal(
      renderManifest({ [ovaFiles.disk]: "ab", [ovaFiles.ovf]: "cd" }),
      "SHA256(disk.vmdk)= ab\nSHA256(disk.ovf)= cd\n",
    );
  });
});
