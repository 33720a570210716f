import type { z } from "zod";

/**
 * Field-level problems of a zod failure, phrased for the model: `path` ("items.0.amount", "(root)"),
 * `code` (zod's issue code), `message`, `expected` (the constraint: a type, ">= 2 characters", one of
 * the allowed values, a pattern; for a custom check, the `params.expected` it states, else absent: its
 * message is then the whole story) and `received` (the JSON type the model sent at that path, or
 * "missing"), plus zod's own constraint fields (minimum, maximum, format, pattern, keys, values).
 * The one mapping of every surface: a run's tool results, MCP tool errors and the HTTP answers carrying
 * them show the same issues.
 */
export function zodIssues(error: z.ZodError, input: unknown): Array<Record<string, unknown>> {
  return error.issues.map((issue) => {
    const { path, message, code, ...rest } = issue as z.core.$ZodIssue & Record<string, unknown>;
    const extra = Object.fromEntries(
      Object.entries(rest).filter(([key]) =>
        ["minimum", "maximum", "inclusive", "format", "pattern", "keys", "values"].includes(key),
      ),
    );
    const expected = expectedOf(issue);
    return {
      path: path.map(String).join(".") || "(root)",
      code,
      message,
      ...(expected === undefined ? {} : { expected }),
      received: receivedAt(input, path),
      ...extra,
    };
  });
}

/**
 * The constraint an issue says was not met, as a short phrase; undefined when zod names none (a custom
 * check without `params.expected`, an invalid key or element: never the message repeated as a type).
 */
function expectedOf(issue: z.core.$ZodIssue): string | undefined {
  switch (issue.code) {
    case "invalid_type":
      return issue.expected;
    case "too_small":
    case "too_big": {
      const op = issue.code === "too_small" ? (issue.inclusive ? ">=" : ">") : issue.inclusive ? "<=" : "<";
      const bound = String(issue.code === "too_small" ? issue.minimum : issue.maximum);
      const unit = issue.origin === "string" ? " characters" : issue.origin === "array" ? " items" : "";
      return `${issue.origin} ${op} ${bound}${unit}`;
    }
    case "invalid_format":
      return issue.pattern ? `${issue.format} ${issue.pattern}` : issue.format;
    case "invalid_value":
      return `one of ${issue.values.map((value) => JSON.stringify(value)).join(", ")}`;
    case "unrecognized_keys":
      return "no other keys";
    case "invalid_union": {
      const inner = issue.errors.flat().map((each) => expectedOf(each));
      const phrases = [...new Set(inner.filter((phrase) => phrase !== undefined))];
      return phrases.length > 0 ? phrases.join(" | ") : undefined;
    }
    case "not_multiple_of":
      return `multiple of ${String(issue.divisor)}`;
    case "custom":
      return typeof issue.params?.expected === "string" ? issue.params.expected : undefined;
    default:
      return undefined;
  }
}

/** The JSON type of the value at `path` in the raw arguments ("string", "null", …, or "missing"). */
function receivedAt(input: unknown, path: readonly PropertyKey[]): string {
  let value: unknown = input;
  for (const key of path) {
    if (typeof value !== "object" || value === null) return "missing";
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  if (value === undefined) return "missing";
  if (value === null) return "null";
  return Array.isArray(value) ? "array" : typeof value;
}
