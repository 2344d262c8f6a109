// Label and id queries as COSI defines them: every term of a query must match,
// several queries are AND-ed; an id query is an (unanchored) regular expression.

import { InvalidInputError } from "../errors.js";

export type LabelOp = "exists" | "equal" | "notExists" | "in" | "lt" | "lte" | "ltNumeric" | "lteNumeric";

export interface LabelTerm {
  key: string;
  op: LabelOp;
  value: string[];
  /** Negates the term's result. */
  invert?: boolean;
}

export interface LabelQuery {
  terms: LabelTerm[];
}

/** Wire enum LabelTerm.Operation numbers, in order. */
export const labelOpsByNumber: readonly LabelOp[] = [
  "exists",
  "equal",
  "notExists",
  "in",
  "lt",
  "lte",
  "ltNumeric",
  "lteNumeric",
];

function numeric(s: string, what: string): number {
  if (!/^-?\d+$/.test(s.trim()))
    throw new InvalidInputError(`label query: ${what} ${JSON.stringify(s)} is not an integer`);
  return Number(s);
}

export function matchesTerm(labels: Record<string, string>, term: LabelTerm): boolean {
  const has = Object.hasOwn(labels, term.key);
  const value = labels[term.key];
  const first = term.value[0] ?? "";
  let result: boolean;
  switch (term.op) {
    case "exists":
      result = has;
      break;
    case "notExists":
      result = !has;
      break;
    case "equal":
      result = has && value === first;
      break;
    case "in":
      result = has && term.value.includes(value!);
      break;
    case "lt":
      result = has && value! < first;
      break;
    case "lte":
      result = has && value! <= first;
      break;
    case "ltNumeric":
      result = has && numeric(value!, "label value") < numeric(first, "query value");
      break;
    case "lteNumeric":
      result = has && numeric(value!, "label value") <= numeric(first, "query value");
      break;
  }
  return term.invert ? !result : result;
}

/** True when every term of every query matches. */
export function matchesLabelQueries(labels: Record<string, string>, queries: readonly LabelQuery[]): boolean {
  return queries.every((q) => q.terms.every((t) => matchesTerm(labels, t)));
}

/** Compiles an id query regexp (RE2 syntax; the common subset JS shares). "" matches everything. */
export function compileIdQuery(regexp: string): RegExp | undefined {
  if (regexp === "") return undefined;
  try {
    return new RegExp(regexp);
  } catch (err) {
    // One line in Go's words, as Talos answers; V8's text repeats the pattern and would repeat again as a cause.
    const why = err instanceof SyntaxError ? goRegexpSyntax(regexp, err.message) : String(err);
    throw new InvalidInputError(`invalid id query regexp ${JSON.stringify(regexp)}: error parsing regexp: ${why}`);
  }
}

/** Go regexp/syntax's wording for the errors V8 and RE2 share; V8's own reason otherwise. */
function goRegexpSyntax(regexp: string, v8Message: string): string {
  const reason = v8Message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, "");
  const quoted = (s: string) => `\`${s}\``;
  if (reason.startsWith("Unterminated group")) return `missing closing ): ${quoted(regexp)}`;
  if (reason.startsWith("Unmatched ')'")) return `unexpected ): ${quoted(regexp)}`;
  if (reason.startsWith("Unterminated character class"))
    return `missing closing ]: ${quoted(regexp.slice(regexp.lastIndexOf("[")))}`;
  if (reason.startsWith("\\ at end of pattern")) return `trailing backslash at end of expression: ${quoted("")}`;
  if (reason.startsWith("Nothing to repeat")) {
    const op = /(?:^|[(|])([*+?]|\{\d+(?:,\d*)?\})/.exec(regexp)?.[1] ?? reason;
    return `missing argument to repetition operator: ${quoted(op)}`;
  }
  return reason;
}
