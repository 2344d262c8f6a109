import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decode, lookupMessage } from "../../../agent/src/api/index.js";
import { catalogDefinitions } from "../../../agent/src/resources/catalog/index.js";
import { namespaces } from "../../../agent/src/resources/catalog/meta.js";
import { memberDefinition } from "../../../agent/src/resources/catalog/cluster.js";
import { extensionStatusDefinition } from "../../../agent/src/resources/catalog/runtime.js";
import { registerCatalog } from "../../../agent/src/resources/catalog/index.js";
import { machineStatusDefinition, type MachineStatusSpec } from "../../../agent/src/resources/catalog/runtime.js";
import { osRootDefinition } from "../../../agent/src/resources/catalog/secrets.js";
import { machineConfigDefinition, machineTypeDefinition } from "../../../agent/src/resources/catalog/config.js";
import {
  NAMESPACE_TYPE,
  RESOURCE_DEFINITION_TYPE,
  type ResourceDefinitionSpec,
  computeDefinitionSpec,
  defineResource,
  encodeSpec,
  lookupDefinition,
  resourceDefinitionDefinition,
  singular,
  yamlSpec,
} from "../../../agent/src/resources/definitions.js";
import { ipBytes, netIPPrefix } from "../../../agent/src/resources/codec.js";
import { marshalGoYaml } from "../../../agent/src/resources/go-yaml.js";
import { ResourceState } from "../../../agent/src/resources/state.js";

describe("resource definitions", () => {
  it("computes display type and aliases as cosi does", () => {
    const spec = computeDefinitionSpec({
      type: "AddressStatuses.net.talos.dev",
      defaultNamespace: "network",
      aliases: ["address", "addresses"],
      protoSpecType: "x",
      toProto: () => ({}),
    });
    assert.equal(spec.displayType, "AddressStatus");
    assert.deepEqual(spec.aliases, ["address", "addresses", "addressstatus", "as"]);
    assert.deepEqual(spec.allAliases, [
      "addressstatuses",
      "addressstatuses.net",
      "addressstatuses.net.talos",
      "address",
      "addresses",
      "addressstatus",
      "as",
    ]);
    assert.equal(spec.sensitivity, undefined);
  });

  it("matches the reference aliases for built-in and catalog kinds", () => {
    assert.deepEqual(resourceDefinitionDefinition.spec.aliases, ["api-resources", "resourcedefinition", "rd", "rds"]);
    assert.deepEqual(machineConfigDefinition.spec.aliases, ["machineconfig", "mc", "mcs"]);
    assert.equal(machineConfigDefinition.spec.sensitivity, "sensitive");
    assert.deepEqual(machineStatusDefinition.spec.aliases, ["machinestatus", "ms"]);
    assert.equal(singular("PlatformMetadatas"), "PlatformMetadata");
    assert.equal(singular("DNSResolveCaches"), "DNSResolveCache");
    assert.equal(singular("Identities"), "Identity");
    assert.equal(singular("Addresses"), "Address");
  });

  it("rejects malformed type strings", () => {
    assert.throws(() =>
      defineResource({ type: "lowercase.talos.dev", defaultNamespace: "x", protoSpecType: "x", toProto: () => ({}) }),
    );
    assert.throws(() =>
      defineResource({ type: "NoSuffix", defaultNamespace: "x", protoSpecType: "x", toProto: () => ({}) }),
    );
  });

  it("registers namespaces and definitions as resources in meta", () => {
    const state = new ResourceState();
    registerCatalog(state, [
      {
        type: "LinkStatuses.net.talos.dev",
        defaultNamespace: "network",
        aliases: ["link", "links"],
        protoSpecType: "talos.resource.definitions.network.LinkStatusSpec",
        toProto: () => ({}),
      },
    ]);
    const nsIds = state.list("meta", NAMESPACE_TYPE).map((r) => r.metadata.id);
    for (const ns of ["meta", "config", "runtime", "secrets", "network", "cluster", "k8s", "etcd", "controlplane"])
      assert.ok(nsIds.includes(ns), ns);
    const rd = state.get<ResourceDefinitionSpec>("meta", RESOURCE_DEFINITION_TYPE, "machineconfigs.config.talos.dev");
    assert.equal(rd?.spec.type, "MachineConfigs.config.talos.dev");
    assert.equal(rd?.spec.defaultNamespace, "config");
    assert.ok(state.get("meta", RESOURCE_DEFINITION_TYPE, "resourcedefinitions.meta.cosi.dev"));
    assert.ok(state.get("meta", RESOURCE_DEFINITION_TYPE, "namespaces.meta.cosi.dev"));
    assert.ok(state.get("meta", RESOURCE_DEFINITION_TYPE, "linkstatuses.net.talos.dev"));
    assert.equal(lookupDefinition(state, "LinkStatuses.net.talos.dev")?.spec.displayType, "LinkStatus");
    assert.equal(lookupDefinition(state, "Nope.talos.dev"), undefined);
  });

  it("encodes the RD spec into cosi.resource.meta.ResourceDefinitionSpec", () => {
    const bytes = encodeSpec(resourceDefinitionDefinition, machineConfigDefinition.spec);
    const msg = decode("cosi.resource.meta.ResourceDefinitionSpec", bytes);
    assert.equal(msg.resource_type, "MachineConfigs.config.talos.dev");
    assert.equal(msg.display_type, "MachineConfig");
    assert.equal(msg.default_namespace, "config");
    assert.deepEqual(msg.aliases, ["machineconfig", "mc", "mcs"]);
    assert.equal(msg.sensitivity, 1);
  });

  it("renders the RD YAML spec with Go key order and omitted non-sensitive sensitivity", () => {
    assert.equal(
      yamlSpec(resourceDefinitionDefinition, machineTypeDefinition.spec),
      [
        "type: MachineTypes.config.talos.dev",
        "displayType: MachineType",
        "defaultNamespace: config",
        "aliases:",
        "    - machinetype",
        "    - mt",
        "    - mts",
        "allAliases:",
        "    - machinetypes",
        "    - machinetypes.config",
        "    - machinetypes.config.talos",
        "    - machinetype",
        "    - mt",
        "    - mts",
        "printColumns:",
        "    - name: Type",
        "      jsonPath: '{@}'",
        "",
      ].join("\n"),
    );
  });

  it("encodes catalog specs: machine config, machine type, machine status, OS root", () => {
    const text = "version: v1alpha1\nmachine: {}\n";
    const cfg = { toYaml: () => text };
    assert.equal(yamlSpec(machineConfigDefinition, cfg), text);
    assert.equal(
      decode("resource.config.MachineConfigSpec", encodeSpec(machineConfigDefinition, cfg)).yaml_marshalled!.toString(),
      text,
    );
    assert.equal(yamlSpec(machineTypeDefinition, "controlplane"), "controlplane\n");
    assert.equal(
      decode("resource.config.MachineTypeSpec", encodeSpec(machineTypeDefinition, "controlplane")).machine_type,
      2,
    );

    const ms: MachineStatusSpec = {
      stage: "shutting down",
      status: { ready: false, unmetConditions: [{ name: "time", reason: "not synced" }] },
    };
    const msg = decode("talos.resource.definitions.runtime.MachineStatusSpec", encodeSpec(machineStatusDefinition, ms));
    assert.equal(msg.stage, 6);
    assert.deepEqual((msg.status as { unmet_conditions: unknown }).unmet_conditions, [
      { name: "time", reason: "not synced" },
    ]);
    assert.equal(
      yamlSpec(machineStatusDefinition, ms),
      "stage: shutting down\nstatus:\n    ready: false\n    unmetConditions:\n        - name: time\n          reason: not synced\n",
    );

    const os = osRootDefinition;
    const spec = {
      issuingCA: { crt: "CRT", key: "KEY" },
      acceptedCAs: [{ crt: "CRT" }],
      certSANIPs: ["10.5.0.2"],
      certSANDNSNames: ["node"],
      token: "abc.def",
    };
    const dec = decode("talos.resource.definitions.secrets.OSRootSpec", encodeSpec(os, spec));
    assert.deepEqual((dec.cert_sani_ps as { ip: Buffer }[])[0]!.ip, Buffer.from([10, 5, 0, 2]));
    assert.equal((dec.issuing_ca as { key: Buffer }).key.toString(), "KEY");
    assert.match(yamlSpec(os, spec), /^issuingCA:\n    crt: Q1JU\n    key: S0VZ\nacceptedCAs:\n/);
  });

  it("every catalog definition names an existing spec message and a registered namespace", () => {
    const nsNames = namespaces.map((n) => n.name);
    for (const def of catalogDefinitions) {
      assert.ok(lookupMessage(def.protoSpecType), def.type);
      assert.ok(nsNames.includes(def.defaultNamespace), def.type);
      assert.equal(def.id, def.type.toLowerCase());
    }
    for (const t of [
      "OSRootSecrets.secrets.talos.dev",
      "ApiCertificates.secrets.talos.dev",
      "CertSANs.secrets.talos.dev",
    ]) {
      assert.equal(catalogDefinitions.find((d) => d.type === t)?.sensitive, true, t);
    }
  });

  it("encodes nested and enum fields through custom and generic mappers", () => {
    const member = decode(
      "talos.resource.definitions.cluster.MemberSpec",
      encodeSpec(memberDefinition, {
        nodeId: "n1",
        addresses: ["10.5.0.2"],
        hostname: "cp1",
        machineType: "controlplane",
        operatingSystem: "Basalt",
        controlPlane: { apiServerPort: 6443 },
      }),
    );
    assert.equal(member.machine_type, 2);
    assert.equal((member.control_plane as { api_server_port: number }).api_server_port, 6443);
    const ext = decode(
      "talos.resource.definitions.extensions.Layer",
      encodeSpec(extensionStatusDefinition, {
        image: "000.sqsh",
        metadata: {
          name: "gvisor",
          version: "1.0",
          author: "a",
          description: "d",
          compatibility: { talos: { version: ">= v1.7.0" } },
        },
      }),
    );
    assert.equal(
      (ext.metadata as { compatibility: { talos: { version: string } } }).compatibility.talos.version,
      ">= v1.7.0",
    );
  });

  it("quotes YAML strings as yaml.v3 does", () => {
    assert.equal(
      marshalGoYaml({ a: "{@}", b: "123", c: "", d: "yes", e: "10.0.0.2/24", f: "00:11:22:33:44:55", g: "x\ny\n" }),
      'a: \'{@}\'\nb: "123"\nc: ""\nd: "yes"\ne: 10.0.0.2/24\nf: "00:11:22:33:44:55"\ng: |\n    x\n    y\n',
    );
  });

  it("parses IPs and prefixes into NetIP bytes", () => {
    assert.deepEqual(ipBytes("fe80::1"), Buffer.from("fe800000000000000000000000000001", "hex"));
    assert.deepEqual(ipBytes("::ffff:10.0.0.1"), Buffer.from("00000000000000000000ffff0a000001", "hex"));
    assert.deepEqual(netIPPrefix("192.168.1.5/24"), { ip: Buffer.from([192, 168, 1, 5]), prefix_length: 24 });
    assert.throws(() => ipBytes("10.0.0"));
  });
});
