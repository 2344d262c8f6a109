// network.LinkSpecController (default layer only, for now): brings up the loopback
// and every physical link, as Talos's default link specs do with no configuration.
// Later this applies merged LinkSpecs (MTU, bonds, VLANs) the same way.

import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { LinkStatusType, type LinkStatusSpec, NETWORK_NAMESPACE } from "../../resources/catalog/network.js";
import type { NetKernel } from "../../sys/net.js";

export interface LinkUpOptions {
  /** Bring up exactly these links (plus lo) instead of every physical link. */
  links?: readonly string[];
  /** Links never touched (talos.network.interface.ignore). */
  ignoreLinks?: readonly string[];
  /** Also bring these up (ip=<dev>:dhcp). */
  extraLinks?: readonly string[];
}

export class LinkUpController implements Controller {
  readonly name = "network.LinkSpecController";
  readonly inputs = [{ namespace: NETWORK_NAMESPACE, type: LinkStatusType, kind: "weak" as const }];
  readonly outputs = [];

  constructor(
    private readonly kernel: NetKernel,
    private readonly opts: LinkUpOptions = {},
  ) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    for (const link of ctx.list<LinkStatusSpec>(NETWORK_NAMESPACE, LinkStatusType)) {
      const name = link.metadata.id;
      const s = link.spec;
      const wanted =
        name === "lo" || (this.opts.links ? this.opts.links.includes(name) : (s.type === "ether" && s.kind === "") || (this.opts.extraLinks?.includes(name) ?? false));
      if (!wanted || this.opts.ignoreLinks?.includes(name)) continue;
      if (!s.flags.split(",").includes("UP")) {
        ctx.log.info("bringing link up", { link: name });
        await this.kernel.setLinkUp(name, true);
      }
    }
  }
}
