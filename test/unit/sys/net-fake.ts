// An in-memory NetKernel for tests: links, addresses and routes behave like the
// kernel's for the cases we use (link up/down with carrier, connected and local
// routes for new IPv4 addresses, replace semantics), and every call is recorded.

import { AlreadyExistsError, ConflictError, InvalidInputError, NotFoundError } from "../../../agent/src/errors.js";
import {
  type AddressRequest,
  type BondOptions,
  ARPHRD_ETHER,
  ARPHRD_LOOPBACK,
  IFA_F_PERMANENT,
  IFF_BROADCAST,
  IFF_LOOPBACK,
  IFF_LOWER_UP,
  IFF_MULTICAST,
  IFF_RUNNING,
  IFF_UP,
  type KernelAddress,
  type KernelLink,
  type KernelRoute,
  type LinkCreateRequest,
  type LinkSettingsRequest,
  type NetChange,
  type NetKernel,
  OPER_DOWN,
  OPER_UNKNOWN,
  OPER_UP,
  RTN_LOCAL,
  RTN_UNICAST,
  RTPROT_BOOT,
  RTPROT_KERNEL,
  type RouteRequest,
  SCOPE_HOST,
  SCOPE_LINK,
  TABLE_LOCAL,
  TABLE_MAIN,
  ipv4Network,
} from "../../../agent/src/sys/net.js";

export interface FakeLinkInit {
  name: string;
  kind?: string;
  type?: number;
  hardwareAddr?: string;
  mtu?: number;
  carrier?: boolean;
  up?: boolean;
  /** A bond's settings, as the kernel would report them. */
  bond?: BondOptions;
}

export class FakeNetKernel implements NetKernel {
  readonly links: KernelLink[] = [];
  addresses: KernelAddress[] = [];
  routes: KernelRoute[] = [];
  /** Every mutating call, as "method arg..." strings. */
  readonly calls: string[] = [];
  private nextIndex = 1;
  private readonly watchers = new Set<(c: Set<NetChange>) => void>();

  constructor(opts: { loopback?: boolean } = {}) {
    if (opts.loopback !== false) {
      this.addLink({
        name: "lo",
        type: ARPHRD_LOOPBACK,
        hardwareAddr: "00:00:00:00:00:00",
        mtu: 65536,
        carrier: true,
        up: true,
      });
    }
  }

  addLink(init: FakeLinkInit): KernelLink {
    const type = init.type ?? ARPHRD_ETHER;
    const link: KernelLink = {
      index: this.nextIndex++,
      name: init.name,
      type,
      flags: type === ARPHRD_LOOPBACK ? IFF_LOOPBACK : IFF_BROADCAST | IFF_MULTICAST,
      mtu: init.mtu ?? 1500,
      hardwareAddr: init.hardwareAddr ?? `02:00:00:00:00:${this.nextIndex.toString(16).padStart(2, "0")}`,
      broadcastAddr: type === ARPHRD_LOOPBACK ? "00:00:00:00:00:00" : "ff:ff:ff:ff:ff:ff",
      permanentAddr: "",
      operState: OPER_DOWN,
      kind: init.kind ?? "",
      slaveKind: "",
      masterIndex: 0,
      linkIndex: 0,
      vlanId: 0,
      vlanProtocol: 0,
      queueDisc: "noop",
      carrier: init.carrier ?? true,
    };
    link.permanentAddr = link.hardwareAddr;
    if (init.bond) link.bond = structuredClone(init.bond);
    this.links.push(link);
    if (init.up) this.applyUp(link, true);
    this.emit("link");
    return link;
  }

  /** Simulates udev renaming a link; the kernel refuses while the link is up (EBUSY). */
  renameLink(from: string, to: string): void {
    const link = this.link(from);
    if ((link.flags & IFF_UP) !== 0) throw new ConflictError(`cannot rename link ${from}: it is up`, { link: from });
    link.name = to;
    this.emit("link");
  }

  /** Simulates a cable (un)plugged. */
  setCarrier(name: string, carrier: boolean): void {
    const link = this.link(name);
    link.carrier = carrier;
    this.applyUp(link, (link.flags & IFF_UP) !== 0);
    this.emit("link");
  }

  async listLinks(): Promise<KernelLink[]> {
    const links = structuredClone(this.links);
    // Like the kernel: a bond names its primary only once that member is enslaved.
    for (const l of links) {
      const primary = l.bond?.primary;
      if (primary && !links.some((m) => m.name === primary && m.masterIndex === l.index)) delete l.bond!.primary;
    }
    return links;
  }

  async listAddresses(): Promise<KernelAddress[]> {
    return structuredClone(this.addresses);
  }

  async listRoutes(): Promise<KernelRoute[]> {
    return structuredClone(this.routes);
  }

  async setLinkUp(name: string, up: boolean): Promise<void> {
    this.calls.push(`setLinkUp ${name} ${up}`);
    this.applyUp(this.link(name), up);
    this.emit("link");
  }

  async setLinkMtu(name: string, mtu: number): Promise<void> {
    this.calls.push(`setLinkMtu ${name} ${mtu}`);
    this.link(name).mtu = mtu;
    this.emit("link");
  }

  async createLink(req: LinkCreateRequest): Promise<void> {
    this.calls.push(`createLink ${req.kind} ${req.name}`);
    if (this.links.some((l) => l.name === req.name))
      throw new AlreadyExistsError(`link ${req.name} exists`, { link: req.name });
    const link = this.addLink({ name: req.name, kind: req.kind });
    if (req.kind === "vlan") {
      link.linkIndex = this.link(req.parentName).index;
      link.vlanId = req.vlanId;
      link.vlanProtocol = req.protocol ?? 0x8100;
    }
    if (req.kind === "bond") link.bond = structuredClone(req.bond);
    if (req.kind === "bridge")
      link.bridge = { stp: req.bridge.stp ?? false, vlanFiltering: req.bridge.vlanFiltering ?? false };
  }

  /** Like the kernel's changelink, which refuses these bond options on a bond that is up (EBUSY) or has members (ENOTEMPTY). */
  async setLinkSettings(req: LinkSettingsRequest): Promise<void> {
    this.calls.push(`setLinkSettings ${req.kind} ${req.name}`);
    const link = this.link(req.name);
    if (link.kind !== req.kind)
      throw new InvalidInputError(`link ${req.name} is a ${link.kind || "device"}, not a ${req.kind}`, {
        link: req.name,
      });
    if (req.kind === "bridge") {
      link.bridge = {
        stp: req.bridge.stp ?? link.bridge?.stp ?? false,
        vlanFiltering: req.bridge.vlanFiltering ?? link.bridge?.vlanFiltering ?? false,
      };
    } else {
      const busy = (
        ["mode", "lacpRate", "adSelect", "failOverMac", "tlbDynamicLb", "adActorSysPrio", "adUserPortKey"] as const
      ).filter((k) => link.bond?.[k] !== req.bond[k]);
      const members = this.links.some((l) => l.masterIndex === link.index);
      if (busy.length > 0 && ((link.flags & IFF_UP) !== 0 || members)) {
        throw new ConflictError(`bond ${req.name}: ${busy.join(", ")} cannot change while it is up or has members`, {
          link: req.name,
        });
      }
      link.bond = structuredClone(req.bond);
    }
    this.emit("link");
  }

  async deleteLink(name: string): Promise<void> {
    this.calls.push(`deleteLink ${name}`);
    const link = this.links.find((l) => l.name === name);
    if (!link) return;
    this.links.splice(this.links.indexOf(link), 1);
    this.addresses = this.addresses.filter((a) => a.linkIndex !== link.index);
    this.routes = this.routes.filter((r) => r.outLinkIndex !== link.index);
    for (const l of this.links) if (l.masterIndex === link.index) l.masterIndex = 0;
    this.emit("link", "address", "route");
  }

  async setLinkMaster(name: string, master: string | undefined): Promise<void> {
    this.calls.push(`setLinkMaster ${name} ${master ?? "none"}`);
    const link = this.link(name);
    const m = master === undefined ? undefined : this.link(master);
    link.masterIndex = m?.index ?? 0;
    link.slaveKind = m?.kind ?? "";
    this.emit("link");
  }

  async addAddress(req: AddressRequest): Promise<void> {
    this.calls.push(`addAddress ${req.linkName} ${req.address}/${req.prefixLen}`);
    const link = this.link(req.linkName);
    const family = req.address.includes(":") ? 6 : 4;
    this.addresses = this.addresses.filter(
      (a) => !(a.linkIndex === link.index && a.address === req.address && a.prefixLen === req.prefixLen),
    );
    this.addresses.push({
      linkIndex: link.index,
      linkName: link.name,
      family,
      address: req.address,
      prefixLen: req.prefixLen,
      local: family === 4 ? req.address : "",
      broadcast: req.broadcast && req.broadcast !== "+" ? req.broadcast : "",
      scope: req.scope ?? 0,
      flags: req.validLifetime === undefined ? IFA_F_PERMANENT : 0,
    });
    if (family === 4) {
      this.routes.push(
        this.kernelRoute(
          link,
          ipv4Network(req.address, req.prefixLen),
          req.prefixLen,
          req.address,
          TABLE_MAIN,
          SCOPE_LINK,
          RTN_UNICAST,
        ),
      );
      this.routes.push(this.kernelRoute(link, req.address, 32, req.address, TABLE_LOCAL, SCOPE_HOST, RTN_LOCAL));
    }
    this.emit("address", "route");
  }

  async announceAddress(linkName: string, address: string): Promise<void> {
    this.calls.push(`announceAddress ${linkName} ${address}`);
  }

  async broadcastUdp4(linkName: string, srcPort: number, dstPort: number, payload: Buffer): Promise<void> {
    this.calls.push(`broadcastUdp4 ${linkName} ${srcPort}->${dstPort} ${payload.length} bytes`);
  }

  async removeAddress(req: AddressRequest): Promise<void> {
    this.calls.push(`removeAddress ${req.linkName} ${req.address}/${req.prefixLen}`);
    const link = this.links.find((l) => l.name === req.linkName);
    if (!link) return;
    this.addresses = this.addresses.filter(
      (a) => !(a.linkIndex === link.index && a.address === req.address && a.prefixLen === req.prefixLen),
    );
    // Like the kernel: routes that use the address as source go with it.
    this.routes = this.routes.filter(
      (r) => !(r.outLinkIndex === link.index && r.protocol === RTPROT_KERNEL && r.src === req.address),
    );
    this.emit("address", "route");
  }

  async addRoute(req: RouteRequest): Promise<void> {
    this.calls.push(
      `addRoute ${req.dst || "default"}/${req.dstLen}${req.gateway ? ` via ${req.gateway}` : ""}${req.outLinkName ? ` dev ${req.outLinkName}` : ""}`,
    );
    const link = req.outLinkName ? this.link(req.outLinkName) : undefined;
    const route: KernelRoute = {
      family: req.family,
      table: req.table ?? TABLE_MAIN,
      dst: req.dst,
      dstLen: req.dstLen,
      src: req.src ?? "",
      gateway: req.gateway ?? "",
      outLinkIndex: link?.index ?? 0,
      outLinkName: link?.name ?? "",
      priority: req.priority ?? 0,
      scope: req.scope ?? 0,
      type: req.type ?? RTN_UNICAST,
      protocol: req.protocol ?? RTPROT_BOOT,
      flags: 0,
      mtu: req.mtu ?? 0,
    };
    this.routes = this.routes.filter((r) => !sameRouteOnLink(r, route));
    this.routes.push(route);
    this.emit("route");
  }

  async removeRoute(req: RouteRequest): Promise<void> {
    this.calls.push(`removeRoute ${req.dst || "default"}/${req.dstLen}`);
    const probe = {
      family: req.family,
      table: req.table ?? TABLE_MAIN,
      dst: req.dst,
      dstLen: req.dstLen,
      priority: req.priority ?? 0,
    };
    this.routes = this.routes.filter(
      (r) =>
        !(
          sameRoute(r, probe) &&
          (req.gateway === undefined || r.gateway === req.gateway) &&
          (req.outLinkName === undefined || r.outLinkName === req.outLinkName)
        ),
    );
    this.emit("route");
  }

  watch(signal: AbortSignal, onChange: (changes: Set<NetChange>) => void): void {
    this.watchers.add(onChange);
    signal.addEventListener("abort", () => this.watchers.delete(onChange), { once: true });
  }

  private link(name: string): KernelLink {
    const link = this.links.find((l) => l.name === name);
    if (!link) throw new NotFoundError(`link ${name} not found`, { link: name });
    return link;
  }

  private applyUp(link: KernelLink, up: boolean): void {
    const base = link.flags & ~(IFF_UP | IFF_RUNNING | IFF_LOWER_UP);
    if (!up) {
      link.flags = base;
      link.operState = OPER_DOWN;
      return;
    }
    const loop = link.type === ARPHRD_LOOPBACK;
    link.operState = loop ? OPER_UNKNOWN : link.carrier ? OPER_UP : OPER_DOWN;
    link.flags = base | IFF_UP | (link.carrier ? IFF_LOWER_UP : 0) | (loop || link.carrier ? IFF_RUNNING : 0);
  }

  private kernelRoute(
    link: KernelLink,
    dst: string,
    dstLen: number,
    src: string,
    table: number,
    scope: number,
    type: number,
  ): KernelRoute {
    return {
      family: 4,
      table,
      dst,
      dstLen,
      src,
      gateway: "",
      outLinkIndex: link.index,
      outLinkName: link.name,
      priority: 0,
      scope,
      type,
      protocol: RTPROT_KERNEL,
      flags: 0,
      mtu: 0,
    };
  }

  private emit(...changes: NetChange[]): void {
    const set = new Set(changes);
    // Asynchronous like the kernel's notifications.
    queueMicrotask(() => {
      for (const w of this.watchers) w(set);
    });
  }
}

function sameRoute(
  a: Pick<KernelRoute, "family" | "table" | "dst" | "dstLen" | "priority">,
  b: Pick<KernelRoute, "family" | "table" | "dst" | "dstLen" | "priority">,
): boolean {
  return (
    a.family === b.family &&
    a.table === b.table &&
    a.dst === b.dst &&
    a.dstLen === b.dstLen &&
    a.priority === b.priority
  );
}

/** Routes of different links or gateways coexist (like the rtnetlink backend, which creates beside them). */
function sameRouteOnLink(a: KernelRoute, b: KernelRoute): boolean {
  return sameRoute(a, b) && a.gateway === b.gateway && a.outLinkName === b.outLinkName;
}
