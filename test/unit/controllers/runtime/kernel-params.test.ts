import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { Observed } from "../../../../agent/src/controllers/index.js";
import { MachineConfigController } from "../../../../agent/src/controllers/config/machine-config.js";
import { KernelParamConfigController } from "../../../../agent/src/controllers/runtime/kernel-param-config.js";
import {
  defaultKernelParams,
  KernelParamDefaultsController,
} from "../../../../agent/src/controllers/runtime/kernel-param-defaults.js";
import { KernelParamSpecController } from "../../../../agent/src/controllers/runtime/kernel-param-spec.js";
import type { ConfigBundle } from "../../../../agent/src/config/bundle.js";
import { loadConfig } from "../../../../agent/src/config/load.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import {
  KernelParamStatusType,
  RUNTIME_NAMESPACE,
  type KernelParamStatusSpec,
} from "../../../../agent/src/resources/catalog/runtime.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";
import { kernelParamsAt, kernelParamsOverlay, paramPath } from "../../../../agent/src/sys/kernel-params.js";

test("keys to files as sysctl.d(5) and Talos map them", () => {
  assert.equal(paramPath("proc.sys.net.ipv4.ip_forward"), "/proc/sys/net/ipv4/ip_forward");
  assert.equal(paramPath("proc.sys.net.ipv4.conf.eth0/100.forwarding"), "/proc/sys/net/ipv4/conf/eth0.100/forwarding");
  assert.equal(paramPath("proc.sys.net/ipv4/conf/eth0.100/forwarding"), "/proc/sys/net/ipv4/conf/eth0.100/forwarding");
  assert.equal(paramPath("sys.kernel.mm.transparent_hugepage.enabled"), "/sys/kernel/mm/transparent_hugepage/enabled");
});

test("Talos's defaults: a machine gets the bridge and KSPP settings and panics on an oops, a container not; IPv6 ones only with IPv6", () => {
  const keys = (o: { container: boolean; ipv6: boolean }) => defaultKernelParams(o).map(([k]) => k);
  assert.equal(keys({ container: false, ipv6: true }).length, 20);
  assert.equal(keys({ container: false, ipv6: true }).at(-1), "proc.sys.kernel.panic_on_oops");
  assert.equal(keys({ container: true, ipv6: true }).length, 10);
  assert.equal(keys({ container: true, ipv6: false }).length, 8);
  assert.ok(keys({ container: false, ipv6: false }).includes("proc.sys.kernel.kptr_restrict"));
  assert.ok(!keys({ container: true, ipv6: true }).includes("proc.sys.net.bridge.bridge-nf-call-iptables"));
});

const sysctlFiles: Record<string, string> = {
  "net/ipv4/ip_forward": "0\n",
  "net/ipv6/conf/default/forwarding": "0\n",
  "net/ipv6/conf/default/accept_ra": "1\n",
  "net/ipv4/tcp_keepalive_time": "7200\n",
  "net/ipv4/tcp_keepalive_intvl": "75\n",
  "kernel/panic": "0\n",
  "kernel/pid_max": "4194304\n",
  "vm/overcommit_memory": "0\n",
  "fs/inotify/max_user_instances": "128\n",
  "fs/aio-max-nr": "65536\n",
  "vm/swappiness": "60\n",
};

function configWith(sysctls: Record<string, string>): ConfigBundle {
  const lines = Object.entries(sysctls)
    .map(([k, v]) => `    ${k}: "${v}"`)
    .join("\n");
  return loadConfig(Buffer.from(`version: v1alpha1\nmachine:\n  type: worker\n  sysctls:\n${lines}\n`));
}

test("sysctls from the config and the defaults written, statuses with the value found before; a removed sysctl gets its old value back", async (t) => {
  const root = mkdtempSync(path.join(os.tmpdir(), "basalt-kparams-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  for (const [f, v] of Object.entries(sysctlFiles)) {
    mkdirSync(path.dirname(path.join(root, "proc/sys", f)), { recursive: true });
    writeFileSync(path.join(root, "proc/sys", f), v);
  }
  const params = kernelParamsAt(root);
  const state = new ResourceState();
  registerCatalog(state);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 60_000 });
  const active = new Observed<ConfigBundle | undefined>(
    configWith({ "vm.swappiness": "10", "net.ipv4.ip_forward": "0" }),
  );
  for (const c of [
    new MachineConfigController(active),
    new KernelParamConfigController(),
    new KernelParamDefaultsController(params, true, {
      load: async (name) => assert.fail(`a container loaded ${name}`),
    }),
    new KernelParamSpecController(params),
  ])
    runtime.register(c);
  const ac = new AbortController();
  t.after(() => ac.abort());
  runtime.start(ac.signal);
  await runtime.whenIdle();
  const file = (f: string) => readFileSync(path.join(root, "proc/sys", f), "utf8");
  const status = (id: string) => state.get(RUNTIME_NAMESPACE, KernelParamStatusType, id)?.spec;
  assert.equal(
    state.list(RUNTIME_NAMESPACE, KernelParamStatusType).length,
    11,
    "10 container defaults and vm.swappiness",
  );
  assert.equal(file("vm/swappiness"), "10");
  assert.deepEqual(status("proc.sys.vm.swappiness"), { current: "10", default: "60", unsupported: false });
  // The config's value wins over the default's.
  assert.equal(file("net/ipv4/ip_forward"), "0");
  assert.deepEqual(status("proc.sys.net.ipv4.ip_forward"), { current: "0", default: "0", unsupported: false });
  assert.equal(file("kernel/panic"), "10");
  assert.deepEqual(status("proc.sys.kernel.panic"), { current: "10", default: "0", unsupported: false });

  active.set(configWith({ "net.ipv4.tcp_fin_timeout": "30" }));
  await runtime.whenIdle();
  assert.equal(file("vm/swappiness"), "60\n", "restored as read");
  assert.equal(status("proc.sys.vm.swappiness"), undefined);
  assert.equal(file("net/ipv4/ip_forward"), "1", "the default applies again");
  // A parameter this kernel lacks fails (not ignored for the config), and the rest still apply.
  assert.equal(status("proc.sys.net.ipv4.tcp_fin_timeout"), undefined);
  assert.equal(state.list(RUNTIME_NAMESPACE, KernelParamStatusType).length, 10);
});

test("on a machine the modules Talos builds in load before the defaults, so the bridge settings apply; a module that fails to load leaves the rest", async () => {
  const events: string[] = [];
  const params = {
    read: async (key: string) =>
      key.includes("bridge") && !events.includes("load br_netfilter")
        ? Promise.reject(Object.assign(new Error("missing"), { code: "ENOENT" }))
        : "0\n",
    write: async (key: string, value: string) => void events.push(`write ${key}=${value}`),
    remove: async () => assert.fail("removed"),
  };
  const modules = {
    load: async (name: string, parameters: readonly string[]) => {
      events.push(`load ${name}`);
      assert.deepEqual(parameters, []);
      if (name === "nf_conntrack") throw new Error("modprobe: FATAL: Module nf_conntrack not found");
    },
  };
  const state = new ResourceState();
  registerCatalog(state);
  const runtime = new ControllerRuntime(state, { initialBackoffMs: 60_000 });
  runtime.register(new KernelParamDefaultsController(params, false, modules));
  runtime.register(new KernelParamSpecController(params));
  const ac = new AbortController();
  runtime.start(ac.signal);
  await runtime.whenIdle();
  ac.abort();
  assert.deepEqual(events.slice(0, 2), ["load br_netfilter", "load nf_conntrack"]);
  assert.equal(events.filter((e) => e.startsWith("write")).length, 20);
  assert.ok(events.includes("write proc.sys.net.bridge.bridge-nf-call-iptables=1"));
  assert.deepEqual(
    state.list<KernelParamStatusSpec>(RUNTIME_NAMESPACE, KernelParamStatusType).filter((r) => r.spec.unsupported),
    [],
  );
});

test("the sandbox's overlay: reads the host until written, writes only under its directory, refuses what the host lacks", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "basalt-kparams-overlay-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const host = {
    read: async (k: string) =>
      k === "proc.sys.kernel.panic" ? "1\n" : Promise.reject(Object.assign(new Error("missing"), { code: "ENOENT" })),
    write: async () => assert.fail("host written"),
    remove: async () => assert.fail("host removed"),
  };
  const overlay = kernelParamsOverlay(dir, host);
  assert.equal(await overlay.read("proc.sys.kernel.panic"), "1\n");
  await overlay.write("proc.sys.kernel.panic", "10");
  assert.equal(await overlay.read("proc.sys.kernel.panic"), "10");
  assert.equal(readFileSync(path.join(dir, "proc/sys/kernel/panic"), "utf8"), "10");
  await assert.rejects(overlay.write("proc.sys.nope", "1"), { code: "ENOENT" });
  await overlay.remove("proc.sys.kernel.panic");
  assert.equal(existsSync(path.join(dir, "proc/sys/kernel/panic")), false);
});
