import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_IDEMPOTENCY_KEY_LENGTH } from "../functions/api/contract.js";
import { ProblemError } from "../functions/api/problem-details.js";
import { parseIdempotencyKey } from "../functions/api/run-idempotency.js";

/**
 * Properties of the Idempotency-Key syntax (draft-ietf-httpapi-idempotency-key-header: an RFC 8941
 * sf-string; plus the bare token form). The quoted form is built here by RFC 8941 section 4.1.6's
 * serialization (escape `\` and `"`, wrap in quotes), independently of the parser under test.
 */
const quote = (key: string) => `"${key.replace(/[\\"]/g, (char) => `\\${char}`)}"`;

const printable = fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code));
const TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz:/";
const tokenChar = fc.constantFrom(...TOKEN_CHARS);
/** A character no sf-string can hold: C0 controls, DEL, and everything past ASCII (lone surrogates too). */
const forbidden = fc
  .oneof(
    fc.integer({ min: 0x00, max: 0x1f }),
    fc.constant(0x7f),
    fc.integer({ min: 0x80, max: 0xffff }),
    fc.integer({ min: 0x10000, max: 0x10ffff }),
  )
  .map((code) => String.fromCodePoint(code));

/** Asserts `value` is refused with 400 INVALID_REQUEST whose `errors` name the header. */
function refused(value: string): boolean {
  try {
    parseIdempotencyKey(value);
  } catch (error) {
    expect(error).toBeInstanceOf(ProblemError);
    expect((error as ProblemError).status).toBe(400);
    expect((error as ProblemError).code).toBe("INVALID_REQUEST");
    expect((error as ProblemError).extensions.errors).toEqual([
      { in: "header", path: "Idempotency-Key", message: (error as ProblemError).message },
    ]);
    return true;
  }
  return false;
}

describe("Idempotency-Key syntax (properties)", () => {
  it("any printable-ASCII key of 1 to 255 characters round-trips through the quoted form", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: printable, minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH }),
        (key) => {
          expect(parseIdempotencyKey(quote(key))).toBe(key);
          // Optional whitespace around the field (RFC 9110 section 5.5) does not change the key.
          expect(parseIdempotencyKey(` \t${quote(key)}\t `)).toBe(key);
        },
      ),
    );
  });

  it("a token is the same key bare and quoted", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: tokenChar, minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH }),
        (key) => {
          expect(parseIdempotencyKey(key)).toBe(key);
          expect(parseIdempotencyKey(quote(key))).toBe(key);
        },
      ),
    );
  });

  it("a control or non-ASCII character anywhere in the key is refused, bare or quoted", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: printable }),
        forbidden,
        fc.string({ unit: printable }),
        (before, bad, after) => {
          const key = `k${before}${bad}${after}k`;
          expect(refused(key)).toBe(true);
          expect(refused(quote(key))).toBe(true);
        },
      ),
    );
  });

  it("a key over 255 characters is refused, bare or quoted; an empty one too", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: tokenChar, minLength: MAX_IDEMPOTENCY_KEY_LENGTH + 1, maxLength: 600 }),
        (key) => {
          expect(refused(key)).toBe(true);
          expect(refused(quote(key))).toBe(true);
        },
      ),
    );
    for (const empty of ["", " ", '""', ' "" ']) expect(refused(empty)).toBe(true);
  });

  it('a backslash escaping anything but " or \\ is refused', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: printable, maxLength: 20 }),
        printable.filter((char) => char !== '"' && char !== "\\"),
        (key, escaped) => {
          expect(refused(`${quote(key).slice(0, -1)}\\${escaped}"`)).toBe(true);
        },
      ),
    );
  });

  it("a bare value with a character outside the token alphabet is refused (it must be quoted)", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: tokenChar, maxLength: 20 }),
        printable.filter((char) => !TOKEN_CHARS.includes(char) && char !== '"' && char !== " "),
        (key, other) => {
          expect(refused(`k${key}${other}`)).toBe(true);
          expect(parseIdempotencyKey(quote(`k${key}${other}`))).toBe(`k${key}${other}`);
        },
      ),
    );
  });
});
