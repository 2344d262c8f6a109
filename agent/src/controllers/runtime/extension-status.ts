import { parse } from "yaml";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { ExtensionStatusType, RUNTIME_NAMESPACE, type ExtensionStatusSpec } from "../../resources/catalog/runtime.js";

interface LayerYaml {
  image?: string;
  metadata?: Partial<ExtensionStatusSpec["metadata"]> & { compatibility?: { talos?: { version?: string } } };
}

/** The layers of an extensions.yaml (Talos's extensions.Config), as ExtensionStatus specs by id (the image without `.sqsh`). */
export function parseExtensionsYaml(text: string): Map<string, ExtensionStatusSpec> {
  const doc = (parse(text) ?? {}) as { layers?: LayerYaml[] };
  const out = new Map<string, ExtensionStatusSpec>();
  for (const layer of doc.layers ?? []) {
    const m = layer.metadata ?? {};
    out.set((layer.image ?? "").replace(/\.sqsh$/, ""), {
      image: layer.image ?? "",
      metadata: {
        name: m.name ?? "",
        version: m.version ?? "",
        author: m.author ?? "",
        description: m.description ?? "",
        compatibility: { talos: { version: m.compatibility?.talos?.version ?? "" } },
        ...(m.extraInfo ? { extraInfo: m.extraInfo } : {}),
      },
    });
  }
  return out;
}

/**
 * ExtensionStatus resources from the image's /etc/extensions.yaml (written by the image build for
 * each extension it took in), read once: extensions do not change while the system runs.
 */
export class ExtensionStatusController implements Controller {
  readonly name = "runtime.ExtensionStatusController";
  readonly inputs = [];
  readonly outputs = [{ type: ExtensionStatusType }];

  /** `read` resolves with the file's text, or undefined when the image has no extensions. */
  constructor(private readonly read: () => Promise<string | undefined>) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    const text = await this.read();
    const layers = text === undefined ? new Map<string, ExtensionStatusSpec>() : parseExtensionsYaml(text);
    for (const [id, spec] of layers)
      ctx.modify<ExtensionStatusSpec>(RUNTIME_NAMESPACE, ExtensionStatusType, id, () => spec);
    ctx.destroyOthers(RUNTIME_NAMESPACE, ExtensionStatusType, new Set(layers.keys()));
  }
}
