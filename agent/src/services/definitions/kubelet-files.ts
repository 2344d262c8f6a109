// /etc/kubernetes/kubelet.yaml as Talos writes it: the KubeletConfiguration through
// Kubernetes' JSON serializer in YAML mode (sigs.k8s.io/yaml: keys sorted, two-space
// indent, sequence items at their key's indent).

import { Document, Scalar, visit } from "yaml";
import { isAmbiguousScalar } from "../../resources/go-yaml.js";
import { sortedKeys } from "../../resources/catalog/k8s-kubelet.js";
import type { Unstructured } from "../../resources/catalog/k8s-kubelet.js";

export function kubeletConfigFile(config: Unstructured): string {
  const doc = new Document(sortedKeys(config), { aliasDuplicateObjects: false });
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === "string" && isAmbiguousScalar(node.value)) node.type = Scalar.QUOTE_DOUBLE;
    },
  });
  return doc.toString({ indent: 2, indentSeq: false, lineWidth: 0, singleQuote: true });
}
