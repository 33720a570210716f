/**
 * How a tool call's arguments text is read, and how a validation issue is phrased for the model: the
 * rules the dispatcher (shared/agent/dispatcher.ts) and the turn's transcript (turn-resolution.ts) share.
 */
import { MAX_NUMBER_DIGITS } from "../money/money.js";

/**
 * The arguments text a call is parsed and sent back with: blank text (`""`, whitespace only) is `"{}"`,
 * anything else is kept as sent. Several OpenAI-compatible servers send `""` for a tool called without
 * arguments; the tool's schema then decides (a tool with required fields still gets INVALID_ARGUMENTS
 * naming them), as the AI SDK and openai-agents-js do for the same report (docs/providers.md).
 */
export function toolArgumentsText(sent: string): string {
  return sent.trim() === "" ? "{}" : sent;
}

/**
 * One issue (shared/agent/zod-issues.ts zodIssues: `path`, `message`, `expected`, `received`) as a clause
 * of INVALID_ARGUMENTS' message: `path: message (expected …, received …)`. A custom check's message
 * states its rule already (e.g. "Amount 99.999 has more decimal places than GBP allows (2)."), so its
 * `expected`, when it has one, stays in the issue and is not repeated: `path: message (received string)`.
 */
export function describeIssue(issue: Readonly<Record<string, unknown>>): string {
  const expected =
    issue.expected === undefined || issue.code === "custom" ? "" : `expected ${String(issue.expected)}, `;
  return `${String(issue.path)}: ${String(issue.message)} (${expected}received ${String(issue.received)})`;
}

/** A JSON number literal (RFC 8259 section 6) at the scanner's position. */
const NUMBER_LITERAL = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** The significant digits of a number literal: its mantissa's digits without leading and trailing zeros. */
function significantDigits(literal: string): number {
  const mantissa = literal
    .replace(/^-/, "")
    .replace(/[eE].*$/, "")
    .replace(".", "");
  return mantissa.replace(/^0+/, "").replace(/0+$/, "").length;
}

/**
 * The number literals of a JSON text (outside its strings) written with more than
 * {@link MAX_NUMBER_DIGITS} significant digits: JSON.parse reads each as the nearest double, which is
 * not the number written (`0.30000000000000001` becomes 0.3), so the value the tool would get is not the
 * one the model sent. Trailing zeros are not significant (`1500.000000000000000000` is exact).
 * @param text a JSON text that JSON.parse accepted
 * @returns each such literal as written, in text order
 */
export function inexactNumberLiterals(text: string): string[] {
  const found: string[] = [];
  let index = 0;
  while (index < text.length) {
    const char = text[index] as string;
    if (char === '"') {
      // Skip the string: a backslash escapes the next character.
      index += 1;
      while (index < text.length && text[index] !== '"') index += text[index] === "\\" ? 2 : 1;
      index += 1;
    } else if (char === "-" || (char >= "0" && char <= "9")) {
      NUMBER_LITERAL.lastIndex = index;
      const literal = NUMBER_LITERAL.exec(text)?.[0] ?? char;
      if (significantDigits(literal) > MAX_NUMBER_DIGITS) found.push(literal);
      index += literal.length;
    } else {
      index += 1;
    }
  }
  return found;
}

/**
 * The INVALID_ARGUMENTS issues of the {@link inexactNumberLiterals} of `text` in its parsed value `raw`:
 * one per literal, at the path of the first number that parsed to the same double, in the shape of
 * shared/agent/zod-issues.ts (with `reason: "PRECISION_LOST"`, as shared/money/money.ts names it).
 */
export function inexactNumberIssues(text: string, raw: unknown): Array<Record<string, unknown>> {
  return inexactNumberLiterals(text).map((literal) => ({
    path: pathOfNumber(raw, Number(literal)) ?? "(root)",
    code: "custom",
    message: `The JSON number ${literal} has more significant digits than a JSON number holds exactly (${MAX_NUMBER_DIGITS}); send it as a decimal string.`,
    expected: "a decimal string",
    received: "number",
    reason: "PRECISION_LOST",
  }));
}

/** The dotted path of the first number equal to `value` in `raw` (depth first), or undefined. */
function pathOfNumber(raw: unknown, value: number, path: string[] = []): string | undefined {
  if (typeof raw === "number") return Object.is(raw, value) ? path.join(".") || "(root)" : undefined;
  if (typeof raw !== "object" || raw === null) return undefined;
  for (const [key, item] of Object.entries(raw)) {
    const found = pathOfNumber(item, value, [...path, key]);
    if (found !== undefined) return found;
  }
  return undefined;
}
