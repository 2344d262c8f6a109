// What the agent (and the libraries in its bundle) ask of ICU, printed as JSON: scripts/image.sh runs it
// with npm's Node and with the image's Node (rootfs/icu-reduce.py's English-only ICU data), each in an
// empty environment as init starts the agent, and fails the build unless both print the same.
// The agent's own uses are localeCompare (sorting ids, links, services) and Date's text; the rest is
// what the runtime and the libraries reach: normalization, case mapping, property escapes, the default
// locale's formats, time zones, the WHATWG 'latin1' decoder, IDN host names.
const words = [
  "b",
  "A",
  "a",
  "B",
  "_x",
  "eth0",
  "eth10",
  "eth2",
  "Z",
  "é",
  "e",
  "E",
  "ß",
  "10",
  "9",
  "bond0.100",
  "br-lan",
  "Ä",
  "z",
  "ñ",
  "n",
];
const at = new Date(Date.UTC(2026, 10, 24, 16, 23, 41, 5));
const uses = {
  icu: process.versions.icu,
  locale: new Intl.Collator().resolvedOptions().locale,
  localeCompare: [...words].sort((x, y) => x.localeCompare(y)),
  collatorEn: [...words].sort(new Intl.Collator("en").compare),
  collatorNumeric: ["eth10", "eth2", "eth1"].sort(new Intl.Collator(undefined, { numeric: true }).compare),
  dateText: [
    at.toString(),
    at.toDateString(),
    at.toTimeString(),
    at.toLocaleString(),
    at.toLocaleString("en-US", { timeZone: "America/New_York" }),
  ],
  dateFormats: ["full", "long", "medium", "short"].map((s) =>
    new Intl.DateTimeFormat("en-US", { dateStyle: s, timeStyle: s, timeZone: "Europe/Berlin" }).format(at),
  ),
  numbers: [
    (1234567.891).toLocaleString(),
    new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" }).format(12.5),
    new Intl.NumberFormat("en", { style: "unit", unit: "megabyte" }).format(73.2),
    new Intl.NumberFormat("en", { notation: "compact" }).format(73166848),
  ],
  plural: [0, 1, 2].map((n) => new Intl.PluralRules("en").select(n)),
  relative: new Intl.RelativeTimeFormat("en").format(-1, "day"),
  list: new Intl.ListFormat("en").format(["a", "b", "c"]),
  displayNames: new Intl.DisplayNames(["en"], { type: "region" }).of("US"),
  timeZones: Intl.supportedValuesOf("timeZone").length,
  segments: [...new Intl.Segmenter("en", { granularity: "word" }).segment("machined: starting 10.0.2.15")].map(
    (s) => s.segment,
  ),
  normalize: ["Å", "ﬁ", "é"].flatMap((s) =>
    ["NFC", "NFD", "NFKC", "NFKD"].map((f) => [...s.normalize(f)].map((c) => c.codePointAt(0))),
  ),
  caseMapping: ["İstanbul".toLowerCase(), "ß".toUpperCase(), "ǅ".toLowerCase(), "straße".toLocaleUpperCase()],
  propertyEscapes: [
    /\p{L}+/u.exec("héllo wörld")?.[0],
    /\p{Script=Greek}/u.test("α"),
    /\p{Lu}/u.test("É"),
    /[\p{Emoji}]/u.test("✓"),
  ],
  latin1: new TextDecoder("latin1").decode(new Uint8Array([0x68, 0xe9, 0x80])),
  utf16: new TextDecoder("utf-16le").decode(new Uint8Array([0x68, 0, 0xe9, 0])),
  idn: new URL("https://bücher.example/").hostname,
};
process.stdout.write(JSON.stringify(uses, null, 1) + "\n");
