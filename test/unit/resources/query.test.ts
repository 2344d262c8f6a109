import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { describeError, InvalidInputError } from "../../../agent/src/errors.js";
import { compileIdQuery, matchesLabelQueries, matchesTerm } from "../../../agent/src/resources/query.js";

const labels = { role: "api", prio: "10", zone: "b" };

describe("label and id queries", () => {
  it("evaluates each operation, with missing labels never matching unless inverted", () => {
    assert.equal(matchesTerm(labels, { key: "role", op: "exists", value: [] }), true);
    assert.equal(matchesTerm(labels, { key: "nope", op: "exists", value: [] }), false);
    assert.equal(matchesTerm(labels, { key: "nope", op: "notExists", value: [] }), true);
    assert.equal(matchesTerm(labels, { key: "role", op: "equal", value: ["api"] }), true);
    assert.equal(matchesTerm(labels, { key: "role", op: "equal", value: ["web"] }), false);
    assert.equal(matchesTerm(labels, { key: "nope", op: "equal", value: ["x"], invert: true }), true);
    assert.equal(matchesTerm(labels, { key: "zone", op: "in", value: ["a", "b"] }), true);
    // lexicographic vs numeric: "10" < "9" as strings, not as numbers
    assert.equal(matchesTerm(labels, { key: "prio", op: "lt", value: ["9"] }), true);
    assert.equal(matchesTerm(labels, { key: "prio", op: "ltNumeric", value: ["9"] }), false);
    assert.equal(matchesTerm(labels, { key: "prio", op: "lteNumeric", value: ["10"] }), true);
    assert.throws(() => matchesTerm(labels, { key: "role", op: "ltNumeric", value: ["1"] }), InvalidInputError);
  });

  it("ANDs terms and queries", () => {
    const role = { key: "role", op: "equal" as const, value: ["api"] };
    const zoneA = { key: "zone", op: "equal" as const, value: ["a"] };
    assert.equal(matchesLabelQueries(labels, [{ terms: [role] }]), true);
    assert.equal(matchesLabelQueries(labels, [{ terms: [role, zoneA] }]), false);
    assert.equal(matchesLabelQueries(labels, [{ terms: [role] }, { terms: [zoneA] }]), false);
    assert.equal(matchesLabelQueries(labels, []), true);
  });

  it("id queries are unanchored regexps; invalid ones are input errors", () => {
    assert.equal(compileIdQuery(""), undefined);
    assert.equal(compileIdQuery("th0")!.test("eth0"), true);
    assert.equal(compileIdQuery("^th0")!.test("eth0"), false);
    assert.throws(() => compileIdQuery("(("), InvalidInputError);
    // Go regexp/syntax's texts, as Talos answers (one line, the pattern once).
    const refused = (re: string) => {
      try {
        compileIdQuery(re);
      } catch (err) {
        assert.ok(err instanceof InvalidInputError);
        return describeError(err);
      }
      assert.fail(`${re} compiled`);
    };
    assert.equal(refused("((("), 'invalid id query regexp "(((": error parsing regexp: missing closing ): `(((`');
    assert.equal(refused("a)"), 'invalid id query regexp "a)": error parsing regexp: unexpected ): `a)`');
    assert.equal(refused("x[ab"), 'invalid id query regexp "x[ab": error parsing regexp: missing closing ]: `[ab`');
    assert.equal(
      refused("*a"),
      'invalid id query regexp "*a": error parsing regexp: missing argument to repetition operator: `*`',
    );
    assert.equal(
      refused("ab\\"),
      'invalid id query regexp "ab\\\\": error parsing regexp: trailing backslash at end of expression: ``',
    );
  });
});
