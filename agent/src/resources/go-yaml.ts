// YAML output shaped like Go's gopkg.in/yaml.v3 Marshal, which Talos uses for
// `yaml_spec`: 4-space indent with sequences indented under their key, no line
// folding, double quotes for strings that would otherwise read as another type,
// literal blocks for multi-line strings, `[]`/`{}` for empty collections.

import { stringify } from "yaml";

export function marshalGoYaml(value: unknown): string {
  if (value === undefined || value === null) return "null\n";
  return stringify(value, {
    indent: 4,
    indentSeq: true,
    lineWidth: 0,
    minContentWidth: 0,
    singleQuote: false,
    blockQuote: "literal",
    nullStr: "null",
    aliasDuplicateObjects: false,
  });
}
