// EtcdConfig `etcd` from a control plane's machine config, as Talos's etcd.ConfigController.
import type { ConfigBundle } from "../../config/bundle.js";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { CONFIG_NAMESPACE, MachineConfigIds, MachineConfigType } from "../../resources/catalog/config.js";
import { ETCD_NAMESPACE, EtcdConfigId, EtcdConfigType, type EtcdConfigSpec } from "../../resources/catalog/etcd.js";
import type { V1Alpha1Config } from "../../config/types/v1alpha1.js";
import { isControlPlane } from "../secrets/api.js";

/** The VIPs of the config's devices and their VLANs: never advertised (they move between nodes). */
function vipAddresses(doc: V1Alpha1Config): string[] {
  const out: string[] = [];
  for (const device of doc.machine?.network?.interfaces ?? []) {
    if (device.vip?.ip) out.push(device.vip.ip);
    for (const vlan of device.vlans ?? []) if (vlan.vip?.ip) out.push(vlan.vip.ip);
  }
  return out;
}

/** EtcdConfig of a v1alpha1 document; `advertisedSubnets` falls back to the deprecated `subnet`. */
export function etcdConfigFrom(doc: V1Alpha1Config): EtcdConfigSpec {
  const etcd = doc.cluster?.etcd ?? {};
  const advertised = etcd.advertisedSubnets?.length ? etcd.advertisedSubnets : etcd.subnet ? [etcd.subnet] : [];
  return {
    advertiseValidSubnets: advertised,
    advertiseExcludeSubnets: vipAddresses(doc),
    listenValidSubnets: etcd.listenSubnets ?? [],
    listenExcludeSubnets: [],
    image: etcd.image ?? "",
    extraArgs: { ...(etcd.extraArgs ?? {}) },
  };
}

export class EtcdConfigController implements Controller {
  readonly name = "etcd.ConfigController";
  readonly inputs = [{ namespace: CONFIG_NAMESPACE, type: MachineConfigType, id: MachineConfigIds.active }];
  readonly outputs = [{ type: EtcdConfigType }];

  async reconcile(ctx: ControllerContext): Promise<void> {
    const doc = ctx
      .get<ConfigBundle>(CONFIG_NAMESPACE, MachineConfigType, MachineConfigIds.active)
      ?.spec?.v1alpha1WithDefaults();
    if (!doc?.machine || !doc.cluster || !isControlPlane(doc.machine.type as Parameters<typeof isControlPlane>[0])) {
      ctx.destroyOthers(ETCD_NAMESPACE, EtcdConfigType, new Set());
      return;
    }
    const spec = etcdConfigFrom(doc);
    ctx.modify<EtcdConfigSpec>(ETCD_NAMESPACE, EtcdConfigType, EtcdConfigId, () => spec);
  }
}
