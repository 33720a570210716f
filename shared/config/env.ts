/**
 * The parsers every configuration section builds its variables from: environment strings (unset or
 * empty meaning "use the default") to typed values.
 *
 * zod/mini (same zod, same core, a tree-shakable API): the deployed handler parses its environment at
 * cold start before anything else is loaded, and zod/mini keeps that to the few checks used here instead
 * of all of zod (measured in bench/cold-start.ts). zod/mini loads no locale by itself: English messages.
 */
import * as z from "zod/mini";
import en from "zod/v4/locales/en.js";

z.config(en());

/** Turns an empty string (an unset variable in many shells and .env files) into undefined. */
export const optionalString = z.pipe(
  z.optional(z.string()),
  z.transform((value: string | undefined) =>
    value === undefined || value.trim() === "" ? undefined : value.trim(),
  ),
);

/**
 * An optional http or https URL (an endpoint the functions call): unset or empty gives undefined. Any
 * other scheme (`file:`, `ftp:`, a bare `host:port`) is refused at cold start: no request could reach it.
 */
export const optionalUrl = z.pipe(
  optionalString,
  z.optional(z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" })),
);

/**
 * The text of a number setting: plain decimal digits, with a leading minus only where `negatives` are
 * allowed. JavaScript's Number() would also read "0x10", "1e1", " 3", "+3" and "3.0" as numbers; a value
 * written so is a mistake or a misunderstanding, refused with the same message at cold start and at
 * synth (infra/settings.ts parses the deploy settings with these schemas).
 */
function decimalDigits(negatives: boolean) {
  return negatives
    ? z.regex(
        /^-?\d+$/,
        "must be a whole number in plain decimal digits, with an optional leading minus, e.g. -5 (no spaces, +, exponent, fraction or 0x)",
      )
    : z.regex(
        /^\d+$/,
        "must be a whole number in plain decimal digits, e.g. 300 (no spaces, sign, exponent, fraction or 0x)",
      );
}

/** An unset, empty or blank variable as undefined (so the default applies); any other text as given. */
const unlessBlank = z.pipe(
  z.optional(z.string()),
  z.transform((value: string | undefined) =>
    value === undefined || value.trim() === "" ? undefined : value,
  ),
);

/** Digits to their number (the digits checked already). */
const toNumber = z.transform((value: string) => Number(value));

/**
 * An integer read from an environment string ({@link decimalDigits}), within [min, max], with a default
 * for an unset, empty or blank variable.
 */
export function envInt(defaultValue: number, min: number, max: number) {
  return z.pipe(
    z.pipe(unlessBlank, z._default(z.string().check(decimalDigits(min < 0)), String(defaultValue))),
    z.pipe(toNumber, z.number().check(z.int(), z.minimum(min), z.maximum(max))),
  );
}

/** A positive integer read from an environment string ({@link decimalDigits}), at most `max`, with a default. */
export function positiveInt(defaultValue: number, max: number) {
  return z.pipe(
    z.pipe(unlessBlank, z._default(z.string().check(decimalDigits(false)), String(defaultValue))),
    z.pipe(toNumber, z.number().check(z.int(), z.positive(), z.maximum(max))),
  );
}

/** An optional positive integer read from an environment string ({@link decimalDigits}), at most `max`; unset, empty or blank: undefined. */
export function optionalPositiveInt(max: number) {
  return z.pipe(
    z.pipe(unlessBlank, z.optional(z.string().check(decimalDigits(false)))),
    z.pipe(
      z.transform((value: string | undefined) => (value === undefined ? undefined : Number(value))),
      z.optional(z.number().check(z.int(), z.positive(), z.maximum(max))),
    ),
  );
}

/** A string of 1 to 255 characters, with a default. */
export function boundedName(defaultValue: string) {
  return z._default(z.string().check(z.minLength(1), z.maxLength(255)), defaultValue);
}

/**
 * A boolean read from an environment string: "true"/"1" or "false"/"0"; unset or empty gives the
 * default. The one boolean parser of every flag.
 */
export function envBoolean(defaultValue: boolean) {
  return z.pipe(
    z.pipe(optionalString, z.optional(z.enum(["true", "false", "1", "0"]))),
    z.transform((value) => (value === undefined ? defaultValue : value === "true" || value === "1")),
  );
}

/** A comma separated list of claim names ("tenant_id,custom:tenant_id"), trimmed, at least one. */
export function claimList(defaultValue: string) {
  return z.pipe(
    z.pipe(
      optionalString,
      z.transform((value) =>
        (value ?? defaultValue)
          .split(",")
          .map((name) => name.trim())
          .filter((name) => name.length > 0),
      ),
    ),
    z
      .array(z.string().check(z.regex(/^[A-Za-z0-9:_.-]{1,128}$/, "claim names are A-Z a-z 0-9 : _ . -")))
      .check(z.minLength(1)),
  );
}

/** A variable holding JSON, parsed (unset or empty gives `{}`); its schema follows in a pipe. */
export const jsonEnv = z.pipe(
  z.optional(z.string()),
  z.transform((value, ctx) => {
    if (value === undefined || value.trim() === "") return {};
    try {
      return JSON.parse(value) as unknown;
    } catch {
      ctx.issues.push({ code: "custom", message: "must be a JSON object", input: value });
      return z.NEVER;
    }
  }),
);
