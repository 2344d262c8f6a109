// YAML output shaped like Go's gopkg.in/yaml.v3 Marshal, which Talos uses for
// `yaml_spec`: 4-space indent with sequences indented under their key, no line
// folding, literal blocks for multi-line strings, `[]`/`{}` for empty collections.
// Quoting follows yaml.v3: a string that would read back as another type (null,
// bool including YAML 1.1 yes/no/on/off, int, float, base-60, timestamp) is
// double-quoted; any other string that cannot be plain is single-quoted.

import { Document, Scalar, visit } from "yaml";

const ambiguous = [
  /^(~|null|Null|NULL)?$/,
  /^(true|True|TRUE|false|False|FALSE)$/,
  /^(y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)$/,
  /^[-+]?(0b[01_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*)$/,
  /^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$/,
  /^[-+]?\.(inf|Inf|INF)$/,
  /^\.(nan|NaN|NAN)$/,
  /^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$/,
  /^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?$/,
];

/** True when yaml.v3 would double-quote this string because it resolves to a non-string. */
export function isAmbiguousScalar(s: string): boolean {
  return ambiguous.some((re) => re.test(s));
}

export function marshalGoYaml(value: unknown): string {
  if (value === undefined || value === null) return "null\n";
  const doc = new Document(value, { aliasDuplicateObjects: false });
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === "string" && !node.value.includes("\n") && isAmbiguousScalar(node.value)) {
        node.type = Scalar.QUOTE_DOUBLE;
      }
    },
  });
  return doc.toString({
    indent: 4,
    indentSeq: true,
    lineWidth: 0,
    minContentWidth: 0,
    singleQuote: true,
    blockQuote: "literal",
    nullStr: "null",
  });
}
