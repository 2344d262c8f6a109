// etcd's pieces as machined connects them: the controllers' options, the etcd service Bootstrap
// starts, and the API context of Bootstrap and the Etcd* calls, over one resource store and one
// supervisor.
import type { EtcdControllersOptions } from "../controllers/etcd/index.js";
import type { MachineTypeName } from "../resources/catalog/config.js";
import { MemberType, type MemberSpec } from "../resources/catalog/cluster.js";
import { NETWORK_NAMESPACE, NodeAddressType, type NodeAddressSpec } from "../resources/catalog/network.js";
import type { ResourceState } from "../resources/state.js";
import { etcdService, type EtcdRunnerFactory } from "../services/definitions/etcd.js";
import type { EtcdCluster } from "../services/definitions/etcd-join.js";
import type { ServiceDefinition } from "../services/service.js";
import type { Supervisor } from "../services/supervisor.js";
import { adminTls, EtcdClient } from "../sys/etcd/client.js";
import { etcdClientPort, etcdPaths } from "../sys/etcd/paths.js";
import type { EtcdutlFactory } from "../sys/etcd/restore.js";
import type { Paths } from "../sys/paths.js";
import { bootstrapEtcd, type EtcdBootstrapRequest } from "./rpc/etcd-bootstrap.js";
import type { EtcdApiContext } from "./rpc/etcd.js";

export interface EtcdWiringOptions {
  state: ResourceState;
  supervisor: Supervisor;
  paths: Paths;
  machineType(): MachineTypeName | undefined;
  /** What runs etcd's process (the image runner in CRI's `system` namespace); default: the etcd binary on PATH. */
  runner?: EtcdRunnerFactory;
  /** Where a restore runs etcdutl (a task from etcd's image); default: etcdutl on PATH. */
  etcdutl?: EtcdutlFactory;
  /** talos.environment and machine.env. */
  env?: () => string[];
}

export interface EtcdWiring {
  controllers: EtcdControllersOptions;
  /** The etcd service a control plane starts at boot (it waits to join, or for Bootstrap). */
  service(): ServiceDefinition;
  api: EtcdApiContext;
}

const hostPort = (host: string, port: number) => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`);
const ips = (spec: NodeAddressSpec | undefined) => (spec?.addresses ?? []).map((p) => p.replace(/\/\d+$/, ""));

export function etcdWiring(o: EtcdWiringOptions): EtcdWiring {
  const paths = etcdPaths(o.paths);
  const local = `localhost:${etcdClientPort}`;
  /**
   * The control plane's etcd endpoints: this node's member and the control-plane members
   * discovery knows (Talos reads them from the Kubernetes endpoints of the apiserver).
   */
  const endpoints = async () => {
    const members = o.state.list<MemberSpec>("cluster", MemberType).map((m) => m.spec);
    const cp = members.filter((m) => m.machineType === "controlplane" || m.machineType === "init");
    return [
      ...new Set([
        local,
        ...cp.flatMap((m) => m.addresses.map((a) => hostPort(a.replace(/\/\d+$/, ""), etcdClientPort))),
      ]),
    ];
  };
  const cluster: EtcdCluster = {
    endpoints,
    tls: () => adminTls(paths.pkiDir),
    addresses: () => ips(o.state.get<NodeAddressSpec>(NETWORK_NAMESPACE, NodeAddressType, "current-no-k8s")?.spec),
  };
  const service = (req?: EtcdBootstrapRequest) =>
    etcdService({
      state: o.state,
      paths,
      machineType: o.machineType,
      cluster,
      ...(req ? { bootstrap: true } : {}),
      ...(req?.recover ? { recover: { skipHashCheck: req.skipHashCheck } } : {}),
      ...(o.runner ? { runner: o.runner } : {}),
      ...(o.etcdutl ? { etcdutl: o.etcdutl } : {}),
      ...(o.env ? { env: o.env } : {}),
    });
  return {
    service: () => service(),
    controllers: {
      pkiDir: paths.pkiDir,
      // Only root can hand the PKI to etcd's user; a sandbox run as another user keeps it.
      ...(process.getuid?.() === 0 ? {} : { pkiOwner: { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 } }),
      localMemberId: async () => {
        const c = new EtcdClient(local, await adminTls(paths.pkiDir));
        try {
          return await c.memberId();
        } finally {
          c.close();
        }
      },
    },
    api: {
      machineType: o.machineType,
      state: o.state,
      paths,
      clientPort: etcdClientPort,
      controlPlaneEndpoints: endpoints,
      stopEtcd: () => o.supervisor.stop("etcd"),
      bootstrapEtcd: (req) => bootstrapEtcd(o.supervisor, service, paths.dataDir, req),
    },
  };
}
