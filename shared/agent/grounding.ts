import BigJs from "big.js";
import type { z } from "zod";
import type { ChatMessage } from "./model.js";
import type { AnswerGroundingSchema, UngroundedNumberSchema } from "./outcome-schema.js";

/**
 * Grounded answers (docs/evals.md, "Grounding"): every number in a run's final answer (amounts, rates,
 * counts) must be one the run's tool results or the user's prompts hold. Dates, times, ids (tokens that
 * mix letters and digits: `inv_3f…`, `GB-2024-01`, `SHA-256`) and list markers are not numbers to check.
 * A number is compared by value, in the forms people and locales write it: `1,800.00`, `1800`,
 * `1.800,00` and `1 800,00` (a no-break space) are all 1800; `20%` matches a rate of 0.20; `1.8k` and `2 million` are
 * scaled. A written form two locales read differently (`1,800`, `1.800`) matches either reading. Signs
 * are ignored (a magnitude is checked), and numbers spelled in words are not read.
 */

export { GROUNDING_MODES, type GroundingMode } from "./grounding-mode.js";

/** A number of the answer that no tool result or prompt holds: as written, and its value read first. */
export type UngroundedNumber = z.infer<typeof UngroundedNumberSchema>;

/**
 * The grounding check of a run's answer (in the outcome, the run record, the `answer.ungrounded` event
 * and the agent span):
 * - `mode`: the ANSWER_GROUNDING in force
 * - `checked`: how many numbers the answer (the one returned, or the one refused) holds
 * - `ungrounded`: those no tool result or prompt holds (empty: grounded)
 * - `action`: `none` (grounded), `reported`, `reasked` (the model answered again; `ungrounded` is then
 *   its second answer's, and `firstUngrounded` the first's), `refused` (the answer was withheld)
 */
export type AnswerGrounding = z.infer<typeof AnswerGroundingSchema>;

const Big: BigJs.BigConstructor = BigJs();

const MONTH =
  "(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)";

/** Spans that are dates, times, ids or list markers: blanked before numbers are read. */
const NOT_NUMBERS: RegExp[] = [
  // ISO 8601 dates and timestamps, numeric dates (31/12/2025, 12.31.2025), times (12:30, 12:30:05)
  /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?/g,
  /\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b/g,
  /\b\d{1,2}:\d{2}(?::\d{2})?\b/g,
  // "1 March 2025", "March 1st, 2025", "March 2025"
  new RegExp(
    `\\b(?:\\d{1,2}(?:st|nd|rd|th)?\\s+)?${MONTH}\\.?(?:\\s+\\d{1,2}(?:st|nd|rd|th)?,?)?(?:\\s+\\d{4})?\\b`,
    "gi",
  ),
  // a currency code glued to its amount ("GBP310.00", "310.00GBP") is a currency, not part of an id
  /(?<![\p{L}\p{N}_])[A-Z]{3}(?=\d)|(?<=\d)[A-Z]{3}(?![\p{L}\p{N}_])/gu,
  // list markers at the start of a line: "1. ", "2) "
  /^[ \t]*(?:[-*][ \t]+)?\d{1,3}[.)](?=[ \t])/gm,
];

/**
 * A written number: digits with optional thousands groups (`,` `.` `'` or a no-break space), an optional
 * decimal part, and an optional `%` or scale word. Scale suffixes glued to the digits (`1.8k`) are read
 * before ids are blanked, see {@link SCALED}.
 */
const NUMBER =
  /(?<![\p{N}.,'])(?:\d{1,3}(?:[,.'\u00a0\u202f]\d{3})+|\d+)(?:[.,]\d+)?(?:\s?%|\s(?:thousand|million|billion)\b)?/gu;

/** A number with a glued scale suffix (`1.8k`, `£2bn`, `3M`), read before ids are blanked. */
const SCALED = /(?<![\p{L}\p{N}_.,-])(\d+(?:[.,]\d+)?)(k|K|M|bn|mn)(?![\p{L}\p{N}_])/gu;

const SCALE: Record<string, string> = {
  k: "1e3",
  K: "1e3",
  thousand: "1e3",
  M: "1e6",
  mn: "1e6",
  million: "1e6",
  bn: "1e9",
  billion: "1e9",
};

/** A number found in a text: as written, and every value it can be read as (normalized decimal strings). */
export interface FoundNumber {
  text: string;
  values: string[];
}

/**
 * A word of letters, digits, `_` and `-`. Ids are the words holding both a letter and a digit (inv_…, qt_…,
 * GB-2024-01); they are found word by word because one pattern for "a word with a letter and a digit"
 * backtracks cubically on a long word (a tool result of 20 000 letters would stall the loop).
 */
const WORD = /[\p{L}\p{N}_-]+/gu;
const ASCII_DIGIT = /\d/;
const LETTER = /\p{L}/u;
const DIGIT = /\p{N}/u;

/** `text` with every span matching `pattern` (and passing `when`) replaced by spaces (offsets kept). */
function blank(text: string, pattern: RegExp, when: (match: string) => boolean = () => true): string {
  return text.replace(pattern, (match) => (when(match) ? " ".repeat(match.length) : match));
}

/** True for an id: a word holding both a letter and a digit. */
function isId(word: string): boolean {
  return LETTER.test(word) && DIGIT.test(word);
}

/** The values a digit string can be read as, by where its separators stand (see the module doc). */
function readings(digits: string): string[] {
  const plain = digits.replace(/['\u00a0\u202f]/g, "");
  const comma = plain.lastIndexOf(",");
  const dot = plain.lastIndexOf(".");
  if (comma >= 0 && dot >= 0) {
    const decimal = comma > dot ? "," : ".";
    const group = decimal === "," ? "." : ",";
    return [plain.replaceAll(group, "").replace(decimal, ".")];
  }
  const separator = comma >= 0 ? "," : dot >= 0 ? "." : undefined;
  if (!separator) return [plain];
  const parts = plain.split(separator);
  const grouped = parts.slice(1).every((part) => part.length === 3);
  const asGroups = parts.join("");
  const asDecimal = parts.length === 2 ? `${parts[0]}.${parts[1]}` : undefined;
  if (grouped && asDecimal) return [asGroups, asDecimal];
  if (grouped) return [asGroups];
  return asDecimal ? [asDecimal] : [];
}

/** Normalizes a decimal string (`1800.00` → `1800`); undefined when big.js cannot read it. */
function normal(value: string): string | undefined {
  try {
    return new Big(value).abs().toString();
  } catch {
    return undefined;
  }
}

/** The values of one written number with its suffix (`%` gives the value and the value / 100). */
function valuesOf(digits: string, suffix: string): string[] {
  const scale = SCALE[suffix.trim()];
  return readings(digits)
    .flatMap((reading) => {
      if (suffix.includes("%")) return [normal(reading), normal(new Big(reading).div(100).toString())];
      return [normal(scale ? new Big(reading).times(scale).toString() : reading)];
    })
    .filter((value): value is string => value !== undefined);
}

/** Every number in `text` worth checking (dates, times, ids and list markers left out), in order. */
export function numbersIn(text: string): FoundNumber[] {
  // Every pattern below needs an ASCII digit: a text without one holds no number (most tool-result
  // strings: names, codes, sentences), and the eight passes over it are skipped.
  if (!ASCII_DIGIT.test(text)) return [];
  const found: Array<FoundNumber & { at: number }> = [];
  let rest = text.replace(SCALED, (match, digits: string, suffix: string, at: number) => {
    found.push({ text: match, values: valuesOf(digits, suffix), at });
    return " ".repeat(match.length);
  });
  for (const pattern of NOT_NUMBERS) rest = blank(rest, pattern);
  rest = blank(rest, WORD, isId);
  for (const match of rest.matchAll(NUMBER)) {
    const digits = /^[\d,.'\u00a0\u202f]+/.exec(match[0])?.[0] ?? match[0];
    found.push({
      text: match[0].trim(),
      values: valuesOf(digits, match[0].slice(digits.length)),
      at: match.index,
    });
  }
  return found
    .filter((number) => number.values.length > 0)
    .sort((a, b) => a.at - b.at)
    .map(({ text: written, values }) => ({ text: written, values }));
}

/** Adds every value a JSON value holds to `into`: numbers, numbers in its strings, and array lengths. */
function collect(value: unknown, into: Set<string>): void {
  if (typeof value === "number" && Number.isFinite(value)) {
    const normalized = normal(String(value));
    if (normalized) into.add(normalized);
  } else if (typeof value === "string") {
    for (const number of numbersIn(value)) for (const v of number.values) into.add(v);
  } else if (Array.isArray(value)) {
    into.add(String(value.length));
    for (const item of value) collect(item, into);
  } else if (value && typeof value === "object") {
    for (const item of Object.values(value)) collect(item, into);
  }
}

/**
 * The values a run's answer may use: every number in its user messages (the prompt, and the earlier
 * prompts of a conversation) and in its tool messages (each tool result's `data` and `error`: numbers,
 * numeric strings, numbers in text, array lengths; never its `metadata`), plus how many calls each tool
 * got and how many succeeded. The system prompt and the model's own messages ground nothing.
 */
export function groundingSources(messages: readonly ChatMessage[]): Set<string> {
  const values = new Set<string>();
  const calls = new Map<string, number>();
  for (const message of messages) {
    if (message.role === "user") collect(message.content, values);
    if (message.role === "assistant") {
      for (const call of message.tool_calls ?? [])
        calls.set(call.function.name, (calls.get(call.function.name) ?? 0) + 1);
    }
    if (message.role === "tool") {
      let result: unknown = message.content;
      try {
        result = JSON.parse(message.content);
      } catch {}
      // A stored transcript may hold a whole envelope: its metadata (latency, running totals, byte counts)
      // is the backend's audit, not a fact of the tool's, so only data and error ground.
      if (result && typeof result === "object" && "status" in result) {
        collect((result as { data?: unknown }).data, values);
        collect((result as { error?: unknown }).error, values);
      } else collect(result, values);
    }
  }
  for (const count of calls.values()) values.add(String(count));
  return values;
}

/**
 * Checks `answer` against the run's transcript (see {@link groundingSources}).
 * @returns how many numbers it holds and those no source holds (as written, with their first reading)
 */
export function checkGrounding(
  answer: string,
  messages: readonly ChatMessage[],
): { checked: number; ungrounded: UngroundedNumber[] } {
  const numbers = numbersIn(answer);
  // An answer without numbers has nothing to ground: the transcript is not read.
  if (numbers.length === 0) return { checked: 0, ungrounded: [] };
  const sources = groundingSources(messages);
  const ungrounded = numbers
    .filter((number) => !number.values.some((value) => sources.has(value)))
    .map((number) => ({ text: number.text, value: number.values[0] as string }));
  return { checked: numbers.length, ungrounded };
}
