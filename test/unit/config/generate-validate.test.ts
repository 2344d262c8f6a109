// Our generated configs must load and validate with the config module, as any
// config from `talosctl gen config` does.
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadConfig, validateConfig } from "../../../agent/src/config/index.js";
import { generateConfigs, generateMachineConfig, MachineTypeEnum } from "../../../agent/src/config/generate/index.js";

test("generated controlplane and worker configs load and validate cleanly (container and metal modes)", async () => {
  const out = await generateConfigs({
    clusterName: "demo",
    endpoint: "https://10.5.0.2:6443",
    additionalSANs: ["10.5.0.2"],
  });
  for (const [name, text] of [
    ["controlplane", out.controlplane],
    ["worker", out.worker],
  ] as const) {
    const bundle = loadConfig(text);
    assert.deepEqual(bundle.warnings, [], name);
    assert.equal(bundle.v1alpha1()?.machine?.type, name);
    assert.deepEqual(validateConfig(bundle, { mode: "container" }), { errors: [], warnings: [] }, name);
    assert.deepEqual(
      validateConfig(bundle, {
        mode: "metal",
        installDisk: (i) => (i.disk === "/dev/sda" ? undefined : "specified install disk does not exist"),
      }).errors,
      [],
      `${name} metal`,
    );
  }
  // The metal check really looks at the install disk.
  const missingDisk = validateConfig(loadConfig(out.worker), {
    mode: "metal",
    installDisk: () => "specified install disk does not exist",
  });
  assert.notDeepEqual(missingDisk.errors, []);

  const rpc = await generateMachineConfig(
    {
      config_version: "v1alpha1",
      cluster_config: { name: "demo", control_plane: { endpoint: "https://10.5.0.2:6443" } },
      machine_config: {
        type: MachineTypeEnum.TYPE_CONTROL_PLANE,
        network_config: { hostname: "cp-1", interfaces: [{ interface: "eth0", cidr: "10.5.0.2/24" }] },
      },
    },
    { secrets: out.secrets },
  );
  assert.deepEqual(validateConfig(loadConfig(rpc.data[0]!), { mode: "container" }).errors, []);
});
