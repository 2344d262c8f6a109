// The kernel command line as /proc/cmdline shows it: words separated by blanks,
// double quotes keeping blanks inside a value (`a="x y"`), quotes themselves dropped.

/** Splits command line text into key/value pairs in order; a word without `=` has value undefined. */
export function cmdlineArgs(text: string): [string, string | undefined][] {
  const out: [string, string | undefined][] = [];
  for (const m of text.matchAll(/(?:[^\s"]+|"[^"]*")+/g)) {
    const word = m[0].replace(/"/g, "");
    const eq = word.indexOf("=");
    out.push(eq < 0 ? [word, undefined] : [word.slice(0, eq), word.slice(eq + 1)]);
  }
  return out;
}
