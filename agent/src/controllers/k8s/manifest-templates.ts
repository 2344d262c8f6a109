// The bootstrap manifests a Talos v1.7 control plane applies, built as Kubernetes
// objects from BootstrapManifestsInput: the same ids, objects and field values as
// Talos's templates (internal/app/machined/pkg/controllers/k8s/templates.go and
// pkg/flannel, flannel v0.25.3), checked object by object against a rendering of
// those templates in test/fixtures/k8s/manifests.

import type { KubernetesObject } from "../../resources/catalog/k8s-manifests.js";
import type { BootstrapManifestsInput } from "./manifest-input.js";

export interface RenderedManifest {
  id: string;
  objects: KubernetesObject[];
}

const KUBE_SYSTEM = "kube-system";
const RBAC = "rbac.authorization.k8s.io";
const RBAC_V1 = `${RBAC}/v1`;

// Names Talos gives the Talos API service and its service account CRD (machinery constants).
const TALOS_API_SERVICE = { name: "talos", namespace: "default", port: 50000 };
const TALOS_SERVICE_ACCOUNT = {
  group: "talos.dev",
  version: "v1alpha1",
  kind: "ServiceAccount",
  singular: "serviceaccount",
  shortName: "tsa",
};

function clusterRoleBinding(name: string, role: string, subjects: object[], metadata: object = {}): KubernetesObject {
  return {
    apiVersion: RBAC_V1,
    kind: "ClusterRoleBinding",
    metadata: { name, ...metadata },
    subjects,
    roleRef: { kind: "ClusterRole", name: role, apiGroup: RBAC },
  };
}

const group = (name: string): object => ({ kind: "Group", name, apiGroup: RBAC });
const serviceAccountSubject = (name: string): object => ({ kind: "ServiceAccount", name, namespace: KUBE_SYSTEM });
const fieldEnv = (name: string, fieldPath: string): object => ({ name, valueFrom: { fieldRef: { fieldPath } } });
const tolerateEverything = [
  { effect: "NoSchedule", operator: "Exists" },
  { effect: "NoExecute", operator: "Exists" },
];

function bootstrapToken(input: BootstrapManifestsInput): KubernetesObject[] {
  return [
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: `bootstrap-token-${input.bootstrapTokenId}`, namespace: KUBE_SYSTEM },
      type: "bootstrap.kubernetes.io/token",
      stringData: {
        "token-id": input.bootstrapTokenId,
        "token-secret": input.bootstrapTokenSecret,
        "usage-bootstrap-authentication": "true",
        "auth-extra-groups": "system:bootstrappers:nodes",
      },
    },
  ];
}

function kubeconfigInCluster(input: BootstrapManifestsInput): KubernetesObject[] {
  // Bootstrapping pods (kube-proxy) read the API server's address from here, not from the service env vars.
  const kubeconfig = [
    "apiVersion: v1",
    "clusters:",
    "- name: local",
    "  cluster:",
    `    server: ${input.server}`,
    "    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
    "users:",
    "- name: service-account",
    "  user:",
    "    # Use service account token",
    "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token",
    "contexts:",
    "- context:",
    "    cluster: local",
    "    user: service-account",
    "",
  ].join("\n");
  return [
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "kubeconfig-in-cluster", namespace: KUBE_SYSTEM },
      data: { kubeconfig },
    },
  ];
}

function corefile(domain: string): string {
  return [
    ".:53 {",
    "    errors",
    "    health {",
    "        lameduck 5s",
    "    }",
    "    ready",
    "    log . {",
    "        class error",
    "    }",
    "    prometheus :9153",
    "",
    `    kubernetes ${domain} in-addr.arpa ip6.arpa {`,
    "        pods insecure",
    "        fallthrough in-addr.arpa ip6.arpa",
    "    }",
    "    forward . /etc/resolv.conf",
    "    cache 30",
    "    loop",
    "    reload",
    "    loadbalance",
    "}",
    "",
  ].join("\n");
}

function coreDNS(input: BootstrapManifestsInput): KubernetesObject[] {
  const rbacDefaults = { "kubernetes.io/bootstrapping": "rbac-defaults" };
  const dnsLabels = { "k8s-app": "kube-dns" };
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "coredns", namespace: KUBE_SYSTEM } },
    clusterRoleBinding("system:coredns", "system:coredns", [serviceAccountSubject("coredns")], {
      labels: rbacDefaults,
      annotations: { "rbac.authorization.kubernetes.io/autoupdate": "true" },
    }),
    {
      apiVersion: RBAC_V1,
      kind: "ClusterRole",
      metadata: { name: "system:coredns", labels: rbacDefaults },
      rules: [
        { apiGroups: [""], resources: ["endpoints", "services", "pods", "namespaces"], verbs: ["list", "watch"] },
        { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
      ],
    },
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "coredns", namespace: KUBE_SYSTEM },
      data: { Corefile: corefile(input.clusterDomain) },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "coredns", namespace: KUBE_SYSTEM, labels: { ...dnsLabels, "kubernetes.io/name": "CoreDNS" } },
      spec: {
        replicas: 2,
        strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
        selector: { matchLabels: dnsLabels },
        template: {
          metadata: { labels: dnsLabels },
          spec: {
            nodeSelector: { "kubernetes.io/os": "linux" },
            affinity: {
              podAntiAffinity: {
                preferredDuringSchedulingIgnoredDuringExecution: [
                  {
                    weight: 100,
                    podAffinityTerm: {
                      labelSelector: { matchExpressions: [{ key: "k8s-app", operator: "In", values: ["kube-dns"] }] },
                      topologyKey: "kubernetes.io/hostname",
                    },
                  },
                ],
              },
            },
            serviceAccountName: "coredns",
            priorityClassName: "system-cluster-critical",
            tolerations: [
              { key: "node-role.kubernetes.io/control-plane", operator: "Exists", effect: "NoSchedule" },
              { key: "node.cloudprovider.kubernetes.io/uninitialized", operator: "Exists", effect: "NoSchedule" },
            ],
            containers: [
              {
                name: "coredns",
                image: input.coreDNSImage,
                imagePullPolicy: "IfNotPresent",
                resources: { limits: { memory: "170Mi" }, requests: { cpu: "100m", memory: "70Mi" } },
                env: [{ name: "GOMEMLIMIT", value: "161MiB" }],
                args: ["-conf", "/etc/coredns/Corefile"],
                volumeMounts: [{ name: "config-volume", mountPath: "/etc/coredns", readOnly: true }],
                ports: [
                  { name: "dns", protocol: "UDP", containerPort: 53 },
                  { name: "dns-tcp", protocol: "TCP", containerPort: 53 },
                  { name: "metrics", protocol: "TCP", containerPort: 9153 },
                ],
                livenessProbe: {
                  httpGet: { path: "/health", port: 8080, scheme: "HTTP" },
                  initialDelaySeconds: 60,
                  timeoutSeconds: 5,
                  successThreshold: 1,
                  failureThreshold: 5,
                },
                readinessProbe: { httpGet: { path: "/ready", port: 8181, scheme: "HTTP" } },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  capabilities: { add: ["NET_BIND_SERVICE"], drop: ["ALL"] },
                  readOnlyRootFilesystem: true,
                },
              },
            ],
            dnsPolicy: "Default",
            volumes: [
              { name: "config-volume", configMap: { name: "coredns", items: [{ key: "Corefile", path: "Corefile" }] } },
            ],
          },
        },
      },
    },
  ];
}

function coreDNSService(input: BootstrapManifestsInput): KubernetesObject[] {
  const ips = [input.dnsServiceIP, input.dnsServiceIPv6].filter((ip) => ip !== "");
  const families = [...(input.dnsServiceIP ? ["IPv4"] : []), ...(input.dnsServiceIPv6 ? ["IPv6"] : [])];
  return [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: "kube-dns",
        namespace: KUBE_SYSTEM,
        annotations: { "prometheus.io/scrape": "true", "prometheus.io/port": "9153" },
        labels: { "k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS" },
      },
      spec: {
        selector: { "k8s-app": "kube-dns" },
        // No address at all renders as YAML null in Talos's template.
        clusterIP: ips[0] ?? null,
        clusterIPs: ips.length ? ips : null,
        ipFamilies: families.length ? families : null,
        ipFamilyPolicy: ips.length === 2 ? "RequireDualStack" : "SingleStack",
        ports: [
          { name: "dns", port: 53, protocol: "UDP" },
          { name: "dns-tcp", port: 53, protocol: "TCP" },
          { name: "metrics", port: 9153, protocol: "TCP" },
        ],
      },
    },
  ];
}

function kubeProxy(input: BootstrapManifestsInput): KubernetesObject[] {
  const labels = { tier: "node", "k8s-app": "kube-proxy" };
  return [
    {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: { name: "kube-proxy", namespace: KUBE_SYSTEM, labels },
      spec: {
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            containers: [
              {
                name: "kube-proxy",
                image: input.proxyImage,
                command: ["/usr/local/bin/kube-proxy", ...input.proxyArgs],
                env: [fieldEnv("NODE_NAME", "spec.nodeName"), fieldEnv("POD_IP", "status.podIP")],
                securityContext: { privileged: true },
                volumeMounts: [
                  { mountPath: "/lib/modules", name: "lib-modules", readOnly: true },
                  { mountPath: "/etc/ssl/certs", name: "ssl-certs-host", readOnly: true },
                  { name: "kubeconfig", mountPath: "/etc/kubernetes", readOnly: true },
                ],
              },
            ],
            hostNetwork: true,
            priorityClassName: "system-cluster-critical",
            serviceAccountName: "kube-proxy",
            tolerations: tolerateEverything,
            volumes: [
              { name: "lib-modules", hostPath: { path: "/lib/modules" } },
              { name: "ssl-certs-host", hostPath: { path: "/etc/ssl/certs" } },
              { name: "kubeconfig", configMap: { name: "kubeconfig-in-cluster" } },
            ],
          },
        },
        updateStrategy: { rollingUpdate: { maxUnavailable: 1 }, type: "RollingUpdate" },
      },
    },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { namespace: KUBE_SYSTEM, name: "kube-proxy" } },
    {
      apiVersion: RBAC_V1,
      kind: "ClusterRoleBinding",
      metadata: { name: "kube-proxy" },
      roleRef: { apiGroup: RBAC, kind: "ClusterRole", name: "system:node-proxier" },
      subjects: [serviceAccountSubject("kube-proxy")],
    },
  ];
}

/** flannel's net-conf.json text, laid out exactly as the template writes it. */
function flannelNetConf(podCIDRs: readonly string[]): string {
  const lines = ["{"];
  for (const cidr of podCIDRs) {
    if (cidr.includes(".")) lines.push(`  "Network": "${cidr}",`);
    else lines.push(`  "IPv6Network": "${cidr}",`, `  "EnableIPv6": true,`);
  }
  if (!podCIDRs.some((c) => c.includes("."))) lines.push(`  "EnableIPv4": false,`);
  lines.push(`  "Backend": {`, `    "Type": "vxlan",`, `    "Port": 4789`, `  }`, "}", "");
  return lines.join("\n");
}

const FLANNEL_CNI_CONF = `{
  "name": "cbr0",
  "cniVersion": "1.0.0",
  "plugins": [
    {
      "type": "flannel",
      "delegate": {
        "hairpinMode": true,
        "isDefaultGateway": true
      }
    },
    {
      "type": "portmap",
      "capabilities": {
        "portMappings": true
      }
    }
  ]
}
`;

function flannel(input: BootstrapManifestsInput): KubernetesObject[] {
  const appLabels = { "k8s-app": "flannel" };
  const nodeLabels = { "k8s-app": "flannel", tier: "node" };
  const env: object[] = [
    fieldEnv("POD_NAME", "metadata.name"),
    fieldEnv("POD_NAMESPACE", "metadata.namespace"),
    { name: "EVENT_QUEUE_DEPTH", value: "5000" },
  ];
  if (input.flannelKubeServiceHost) env.push({ name: "KUBERNETES_SERVICE_HOST", value: input.flannelKubeServiceHost });
  if (input.flannelKubeServicePort) env.push({ name: "KUBERNETES_SERVICE_PORT", value: input.flannelKubeServicePort });
  const cfgMount = { mountPath: "/etc/kube-flannel/", name: "flannel-cfg" };
  return [
    {
      apiVersion: RBAC_V1,
      kind: "ClusterRole",
      metadata: { labels: appLabels, name: "flannel" },
      rules: [
        { apiGroups: [""], resources: ["pods"], verbs: ["get"] },
        { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch"] },
        { apiGroups: [""], resources: ["nodes/status"], verbs: ["patch"] },
      ],
    },
    {
      apiVersion: RBAC_V1,
      kind: "ClusterRoleBinding",
      metadata: { labels: appLabels, name: "flannel" },
      roleRef: { apiGroup: RBAC, kind: "ClusterRole", name: "flannel" },
      subjects: [serviceAccountSubject("flannel")],
    },
    {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { labels: appLabels, name: "flannel", namespace: KUBE_SYSTEM },
    },
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "kube-flannel-cfg", namespace: KUBE_SYSTEM, labels: { tier: "node", "k8s-app": "flannel" } },
      data: { "cni-conf.json": FLANNEL_CNI_CONF, "net-conf.json": flannelNetConf(input.podCIDRs) },
    },
    {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: { labels: nodeLabels, name: "kube-flannel", namespace: KUBE_SYSTEM },
      spec: {
        selector: { matchLabels: nodeLabels },
        template: {
          metadata: { labels: nodeLabels },
          spec: {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [
                    { matchExpressions: [{ key: "kubernetes.io/os", operator: "In", values: ["linux"] }] },
                  ],
                },
              },
            },
            containers: [
              {
                args: ["--ip-masq", "--kube-subnet-mgr", ...input.flannelExtraArgs],
                command: ["/opt/bin/flanneld"],
                env,
                image: input.flannelImage,
                name: "kube-flannel",
                resources: { requests: { cpu: "100m", memory: "50Mi" } },
                securityContext: { capabilities: { add: ["NET_ADMIN", "NET_RAW"] }, privileged: false },
                volumeMounts: [{ mountPath: "/run/flannel", name: "run" }, cfgMount],
              },
            ],
            hostNetwork: true,
            initContainers: [
              {
                args: ["-f", "/etc/kube-flannel/cni-conf.json", "/etc/cni/net.d/10-flannel.conflist"],
                command: ["cp"],
                image: input.flannelImage,
                name: "install-config",
                resources: {},
                volumeMounts: [{ mountPath: "/etc/cni/net.d", name: "cni" }, cfgMount],
              },
              {
                command: ["/install-cni.sh"],
                image: input.flannelCNIImage,
                name: "install-cni",
                resources: {},
                volumeMounts: [{ mountPath: "/host/opt/cni/bin/", name: "cni-plugin" }],
              },
            ],
            priorityClassName: "system-node-critical",
            serviceAccountName: "flannel",
            tolerations: tolerateEverything,
            volumes: [
              { hostPath: { path: "/run/flannel" }, name: "run" },
              { hostPath: { path: "/opt/cni/bin" }, name: "cni-plugin" },
              { hostPath: { path: "/etc/cni/net.d" }, name: "cni" },
              { configMap: { name: "kube-flannel-cfg" }, name: "flannel-cfg" },
            ],
          },
        },
        updateStrategy: {},
      },
    },
  ];
}

function podSecurityPolicy(): KubernetesObject[] {
  const name = "psp:privileged";
  const runAsAny = { rule: "RunAsAny" };
  return [
    {
      kind: "ClusterRole",
      apiVersion: RBAC_V1,
      metadata: { name },
      rules: [
        { apiGroups: ["policy"], resources: ["podsecuritypolicies"], verbs: ["use"], resourceNames: ["privileged"] },
      ],
    },
    {
      kind: "ClusterRoleBinding",
      apiVersion: RBAC_V1,
      metadata: { name },
      roleRef: { kind: "ClusterRole", name, apiGroup: RBAC },
      subjects: [
        { kind: "Group", apiGroup: RBAC, name: "system:serviceaccounts" },
        { kind: "Group", apiGroup: RBAC, name: "system:authenticated" },
      ],
    },
    {
      apiVersion: "policy/v1beta1",
      kind: "PodSecurityPolicy",
      metadata: {
        name: "privileged",
        annotations: { "seccomp.security.alpha.kubernetes.io/allowedProfileNames": "*" },
      },
      spec: {
        fsGroup: runAsAny,
        privileged: true,
        runAsUser: runAsAny,
        seLinux: runAsAny,
        supplementalGroups: runAsAny,
        volumes: ["*"],
        allowedCapabilities: ["*"],
        hostPID: true,
        hostIPC: true,
        hostNetwork: true,
        hostPorts: [{ min: 1, max: 65536 }],
      },
    },
  ];
}

function talosAPIService(): KubernetesObject[] {
  const { name, namespace, port } = TALOS_API_SERVICE;
  return [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { labels: { component: "apid", provider: "talos" }, name, namespace },
      spec: { ports: [{ name: "apid", port, protocol: "TCP", targetPort: port }] },
    },
  ];
}

function talosServiceAccountCRD(): KubernetesObject[] {
  const sa = TALOS_SERVICE_ACCOUNT;
  const plural = `${sa.singular}s`;
  return [
    {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: `${plural}.${sa.group}` },
      spec: {
        conversion: { strategy: "None" },
        group: sa.group,
        names: { kind: sa.kind, listKind: `${sa.kind}List`, plural, singular: sa.singular, shortNames: [sa.shortName] },
        scope: "Namespaced",
        versions: [
          {
            name: sa.version,
            schema: {
              openAPIV3Schema: {
                properties: {
                  spec: { type: "object", properties: { roles: { type: "array", items: { type: "string" } } } },
                  status: { type: "object", properties: { failureReason: { type: "string" } } },
                },
                type: "object",
              },
            },
            served: true,
            storage: true,
          },
        ],
      },
    },
  ];
}

function hostDNSService(input: BootstrapManifestsInput): KubernetesObject[] {
  const ip = input.serviceHostDNSAddress;
  return [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "host-dns", namespace: KUBE_SYSTEM },
      spec: {
        clusterIP: ip,
        ports: [
          { name: "dns", port: 53, protocol: "UDP", targetPort: 53 },
          { name: "dns-tcp", port: 53, protocol: "TCP", targetPort: 53 },
        ],
        type: "ClusterIP",
      },
    },
    {
      apiVersion: "v1",
      kind: "Endpoints",
      metadata: { name: "host-dns", namespace: KUBE_SYSTEM },
      subsets: [
        {
          addresses: [{ ip }],
          ports: [
            { name: "dns", port: 53, protocol: "UDP" },
            { name: "dns-tcp", port: 53, protocol: "TCP" },
          ],
        },
      ],
    },
  ];
}

/** The bootstrap manifests for `input`, in Talos's order (the apply sorts by id). */
export function renderBootstrapManifests(input: BootstrapManifestsInput): RenderedManifest[] {
  const out: RenderedManifest[] = [
    { id: "00-kubelet-bootstrapping-token", objects: bootstrapToken(input) },
    {
      id: "01-csr-node-bootstrap",
      objects: [
        clusterRoleBinding("system-bootstrap-node-bootstrapper", "system:node-bootstrapper", [
          group("system:bootstrappers:nodes"),
          group("system:nodes"),
        ]),
      ],
    },
    {
      id: "01-csr-approver-role-binding",
      objects: [
        clusterRoleBinding(
          "system-bootstrap-approve-node-client-csr",
          "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
          [group("system:bootstrappers:nodes")],
        ),
      ],
    },
    {
      id: "01-csr-renewal-role-binding",
      objects: [
        clusterRoleBinding(
          "system-bootstrap-node-renewal",
          "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
          [group("system:nodes")],
        ),
      ],
    },
    { id: "11-kube-config-in-cluster", objects: kubeconfigInCluster(input) },
  ];
  if (input.coreDNSEnabled)
    out.push({ id: "11-core-dns", objects: coreDNS(input) }, { id: "11-core-dns-svc", objects: coreDNSService(input) });
  if (input.flannelEnabled) out.push({ id: "05-flannel", objects: flannel(input) });
  if (input.proxyEnabled) out.push({ id: "10-kube-proxy", objects: kubeProxy(input) });
  if (input.podSecurityPolicyEnabled) out.push({ id: "03-default-pod-security-policy", objects: podSecurityPolicy() });
  if (input.talosAPIServiceEnabled)
    out.push(
      { id: "12-talos-api-service", objects: talosAPIService() },
      { id: "13-talos-service-account-crd", objects: talosServiceAccountCRD() },
    );
  if (input.serviceHostDNSAddress) out.push({ id: "15-host-dns-service", objects: hostDNSService(input) });
  return out;
}
