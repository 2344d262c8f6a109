import { describeError } from "../../errors.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { KernelParamDefaultSpecType, type KernelParamSpecSpec } from "../../resources/catalog/kernel-params.js";
import { RUNTIME_NAMESPACE } from "../../resources/catalog/runtime.js";
import type { KernelModules } from "../../sys/kernel-modules.js";
import type { KernelParams } from "../../sys/kernel-params.js";

type Param = [key: string, value: string];

/** The Kernel Self Protection Project settings Talos enforces on a machine (not in a container). */
export const ksppParams: readonly Param[] = [
  ["proc.sys.kernel.kptr_restrict", "1"],
  ["proc.sys.kernel.dmesg_restrict", "1"],
  ["proc.sys.kernel.perf_event_paranoid", "3"],
  ["proc.sys.kernel.yama.ptrace_scope", "1"],
  ["proc.sys.user.max_user_namespaces", "0"],
  ["proc.sys.kernel.unprivileged_bpf_disabled", "1"],
  ["proc.sys.net.core.bpf_jit_harden", "2"],
];

/**
 * What Talos's own kernel is built with and Debian's is not (CONFIG_PANIC_ON_OOPS): the kubelet's
 * protectKernelDefaults refuses to start on a kernel that does not panic on an oops.
 */
const kernelConfigParams: readonly Param[] = [["proc.sys.kernel.panic_on_oops", "1"]];

/** Talos v1.7's defaults, in its order; `container`: the sandbox, which like Talos in a container leaves the bridge and KSPP settings alone. */
export function defaultKernelParams(opts: { container: boolean; ipv6: boolean }): Param[] {
  const out: Param[] = [["proc.sys.net.ipv4.ip_forward", "1"]];
  if (!opts.container)
    out.push(
      ["proc.sys.net.bridge.bridge-nf-call-iptables", "1"],
      ["proc.sys.net.bridge.bridge-nf-call-ip6tables", "1"],
    );
  if (opts.ipv6)
    out.push(["proc.sys.net.ipv6.conf.default.forwarding", "1"], ["proc.sys.net.ipv6.conf.default.accept_ra", "2"]);
  out.push(
    ["proc.sys.net.ipv4.tcp_keepalive_time", "600"],
    ["proc.sys.net.ipv4.tcp_keepalive_intvl", "60"],
    ["proc.sys.kernel.panic", "10"],
    ["proc.sys.kernel.pid_max", "262144"],
    ["proc.sys.vm.overcommit_memory", "1"],
    ["proc.sys.fs.inotify.max_user_instances", "8192"],
    ["proc.sys.fs.aio-max-nr", "1048576"],
  );
  if (!opts.container) out.push(...ksppParams, ...kernelConfigParams);
  return out;
}

/**
 * Built into Talos's kernel, modules in Debian's: br_netfilter holds the bridge defaults above (and
 * makes pod-to-Service replies on one bridge pass through conntrack), nf_conntrack the tables
 * kube-proxy sets at its start.
 */
export const builtInModules = ["br_netfilter", "nf_conntrack"] as const;

/**
 * KernelParamDefaultSpecs: Talos's defaults, written once, on a machine after the modules its
 * kernel has built in. Unlike Talos they are marked ignoreErrors, so a parameter this kernel lacks
 * (Yama) shows as unsupported instead of failing the whole set on every retry.
 */
export class KernelParamDefaultsController implements Controller {
  readonly name = "runtime.KernelParamDefaultsController";
  readonly inputs = [];
  readonly outputs = [{ type: KernelParamDefaultSpecType, kind: "shared" as const }];

  constructor(
    private readonly params: KernelParams,
    private readonly container: boolean,
    private readonly modules: KernelModules,
  ) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    if (!this.container) await this.loadBuiltInModules(ctx);
    // IPv6 defaults only where the kernel has IPv6 (its sysctl directory exists), as Talos decides.
    const ipv6 = await this.params.read("proc.sys.net.ipv6.conf.default.accept_ra").then(
      () => true,
      (err: NodeJS.ErrnoException) => err.code !== "ENOENT",
    );
    for (const [key, value] of defaultKernelParams({ container: this.container, ipv6 })) {
      ctx.modify<KernelParamSpecSpec>(RUNTIME_NAMESPACE, KernelParamDefaultSpecType, key, () => ({
        value,
        ignoreErrors: true,
      }));
    }
  }

  private async loadBuiltInModules(ctx: ControllerContext): Promise<void> {
    for (const name of builtInModules) {
      // A kernel without the module still gets every other default; its bridge settings show as unsupported.
      await this.modules
        .load(name, [])
        .catch((err: unknown) =>
          ctx.log.warn("loading a built-in module failed", { module: name, error: describeError(err) }),
        );
    }
  }
}
