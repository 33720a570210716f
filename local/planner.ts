/**
 * The deterministic local planner: reads a chat-completions conversation and decides the next assistant
 * message for tax and invoice requests like the seed's. It is a fixed set of rules, not an LLM; every
 * final answer says so. Numbers in its answers are copied from tool results, never computed here.
 */

/** A chat message as the planner reads it (the subset of the OpenAI shape it needs). */
export interface PlannerMessage {
  role: string;
  content?: unknown;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

/** The planner's decision: tool calls to make, or a final text answer. */
export type PlannerReply =
  | { kind: "tool_calls"; calls: Array<{ id: string; name: string; arguments: string }> }
  | { kind: "answer"; content: string };

/** An invoice request found in the prompt: subtotal, currency and where the client is. */
export interface InvoiceRequest {
  amount: string;
  currency: string;
  /** What the model sends as `jurisdiction`: an explicit code if the user gave one, else the country. */
  jurisdiction: string;
  /** How the prompt names the client's place, e.g. "UK" or "Germany". */
  label: string;
  /** Where in the prompt the request ends (for matching "record … for the UK client"). */
  end: number;
}

/** Marks every text the planner writes. */
export const PLANNER_BANNER = "[boundloop local planner: deterministic rules, not an LLM]";

const SYMBOLS: Record<string, string> = { "£": "GBP", "€": "EUR", $: "USD", "¥": "JPY", "৳": "BDT" };

/** Country names the planner recognizes, mapped to what it passes on (the backend decides support). */
const COUNTRIES: Array<[RegExp, string, string]> = [
  [/\b(the\s+)?UK\b|\bUnited Kingdom\b|\bBritain\b|\bEngland\b/i, "UK", "UK"],
  [/\bGermany\b/i, "Germany", "DE"],
  [/\bBangladesh\b/i, "Bangladesh", "BD"],
  [/\bFrance\b/i, "France", "FR"],
  [/\bSpain\b/i, "Spain", "ES"],
  [/\bItaly\b/i, "Italy", "IT"],
  [/\bIreland\b/i, "Ireland", "IE"],
  [/\bNetherlands\b/i, "Netherlands", "NL"],
  [/\bJapan\b/i, "Japan", "JP"],
  [/\b(the\s+)?(USA|US|United States)\b/, "US", "US"],
];

const AMOUNT =
  /(?:([£€$¥৳])\s?(\d[\d,]*(?:\.\d+)?))|(?:(\d[\d,]*(?:\.\d+)?)\s*([A-Z]{3})\b)|(?:\b([A-Z]{3})\s?(\d[\d,]*(?:\.\d+)?))/g;

/** Finds every "amount currency … in <place>" request in a prompt, in order. */
export function extractInvoiceRequests(prompt: string): InvoiceRequest[] {
  const matches = [...prompt.matchAll(AMOUNT)];
  return matches.flatMap((match, index) => {
    const symbol = match[1];
    const amount = (match[2] ?? match[3] ?? match[6] ?? "").replaceAll(",", "");
    const currency = symbol ? (SYMBOLS[symbol] ?? "") : (match[4] ?? match[5] ?? "");
    const start = (match.index ?? 0) + match[0].length;
    const next = matches[index + 1];
    const end = next?.index ?? prompt.length;
    const tail = prompt.slice(start, end).split(/[.;!?](?:\s|$)/)[0] ?? "";
    const place = findPlace(tail);
    if (!amount || !currency || !place) return [];
    return [{ amount, currency, jurisdiction: place.code, label: place.label, end }];
  });
}

/** The first place named in `text`; an explicit "(XX)" code wins over the country's usual code. */
function findPlace(text: string): { label: string; code: string } | undefined {
  const explicit = /\(([A-Za-z]{2})\)/.exec(text)?.[1]?.toUpperCase();
  const first = COUNTRIES.map(([pattern, label, code]) => ({
    at: pattern.exec(text)?.index ?? -1,
    label,
    code,
  }))
    .filter((hit) => hit.at >= 0)
    .sort((a, b) => a.at - b.at)[0];
  if (first) return { label: first.label, code: explicit ?? first.code };
  if (explicit) return { label: explicit, code: explicit };
  const bare = /\b(?:in|for)\s+([A-Z]{2})\b/.exec(text);
  return bare?.[1] ? { label: bare[1], code: bare[1] } : undefined;
}

interface SeenCall {
  name: string;
  args: Record<string, unknown>;
  result:
    | {
        status?: string;
        data?: Record<string, unknown>;
        error?: { code?: string; message?: string; retryable?: boolean };
      }
    | undefined;
}

/** How many times the planner makes one call in all: the first try and one retry (see {@link needsCall}). */
const MAX_TRIES = 2;

/**
 * Whether a call still has to be made, given the earlier calls made for the same thing: when there were
 * none, or when every one failed with a fatal_error the tool marked retryable (the data store was
 * unreachable, say) and fewer than {@link MAX_TRIES} were made.
 */
function needsCall(earlier: SeenCall[]): boolean {
  if (earlier.length === 0) return true;
  return (
    earlier.length < MAX_TRIES &&
    earlier.every((c) => c.result?.status === "fatal_error" && c.result.error?.retryable === true)
  );
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => (part as { text?: string }).text ?? "").join("");
  return "";
}

function parseJson(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === "object" ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The tool calls of `messages`, each with its tool result when one follows. */
function callsOf(messages: PlannerMessage[]): SeenCall[] {
  const results = new Map(
    messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, parseJson(textOf(m.content))]),
  );
  return messages.flatMap((m) =>
    (m.tool_calls ?? []).map((call) => ({
      name: call.function.name,
      args: parseJson(call.function.arguments),
      result: results.get(call.id) as SeenCall["result"],
    })),
  );
}

/**
 * Decides the next assistant message. A prompt with no amount to calculate that names an invoice id, or asks
 * to list invoices, takes the read path (getInvoice / listInvoices, see {@link planRead}; `offered`: the tool
 * names the request offers). Otherwise: calculateTax for every request found; then, when the prompt asks
 * to record, recordInvoice (with the quoteId calculateTax returned) for the requests it names (all, if
 * it names none) whose tax succeeded; then a final answer built from this prompt's tool results. A call
 * that failed with a retryable fatal_error (e.g. STORE_UNAVAILABLE) is made once more before the answer.
 *
 * A follow-up in a continued conversation that asks to record but names no amount ("now
 * record it") takes the requests of the latest earlier prompt that had some, with the quotes that
 * conversation's calculateTax calls returned. Earlier prompts' recordInvoice calls do not count: asked
 * again, the planner asks again, and the backend decides (QUOTE_ALREADY_RECORDED).
 */
export function plan(messages: PlannerMessage[], offered?: readonly string[]): PlannerReply {
  const lastUser = messages.map((m) => m.role).lastIndexOf("user");
  const prompt = textOf(messages[lastUser]?.content);
  const earlier = messages.slice(0, Math.max(0, lastUser));
  const current = callsOf(messages.slice(lastUser + 1));
  const turn = messages.filter((m) => m.role === "assistant").length + 1;
  const id = (index: number) => `call_${turn}_${index}`;
  const recordIntent = /\b(record|book|save|log)\b/i.exec(prompt);
  let requests = extractInvoiceRequests(prompt);
  if (requests.length === 0 && !recordIntent) {
    const read = planRead(prompt, current, offered, id);
    if (read) return read;
  }
  let fromHistory = false;
  if (requests.length === 0 && recordIntent) {
    const earlierPrompts = earlier.filter((m) => m.role === "user").reverse();
    for (const message of earlierPrompts) {
      requests = extractInvoiceRequests(textOf(message.content));
      if (requests.length > 0) {
        fromHistory = true;
        break;
      }
    }
  }

  if (requests.length === 0) {
    return {
      kind: "answer",
      content: `${PLANNER_BANNER} I found no amount with a currency and a client location in the request${recordIntent ? " or earlier in the conversation" : ""}, so I called no tool.`,
    };
  }
  // A follow-up records the quotes the conversation already has; a new request is calculated afresh.
  const taxCalls = (fromHistory ? [...callsOf(earlier), ...current] : current).filter(
    (c) => c.name === "calculateTax",
  );
  const taxCallsFor = (r: InvoiceRequest) =>
    taxCalls.filter((c) => c.args.jurisdiction === r.jurisdiction && c.args.amount === r.amount);
  const untaxed = requests.filter((r) => needsCall(taxCallsFor(r)));
  if (untaxed.length > 0) {
    return {
      kind: "tool_calls",
      calls: untaxed.map((r, i) => ({
        id: id(i),
        name: "calculateTax",
        arguments: JSON.stringify({
          amount: r.amount,
          currency: r.currency,
          jurisdiction: r.jurisdiction,
          taxPointDate: null,
        }),
      })),
    };
  }

  const recordCalls = current.filter((c) => c.name === "recordInvoice");
  if (recordIntent) {
    const afterIntent = prompt.slice(recordIntent.index);
    const mentions = (word: string) => new RegExp(`\\b${word}\\b`, "i").test(afterIntent);
    const named = requests.filter((r) => mentions(r.label) || mentions(r.jurisdiction));
    // Each invoice is recorded from the quote its own successful calculateTax returned; the planner
    // passes the quoteId on and no amount (recordInvoice takes none).
    const targets = (named.length > 0 ? named : requests).flatMap((r) => {
      const quoteId = taxCallsFor(r).find((c) => c.result?.status === "success")?.result?.data?.quoteId;
      if (typeof quoteId !== "string") return [];
      return needsCall(recordCalls.filter((c) => c.args.quoteId === quoteId))
        ? [{ request: r, quoteId }]
        : [];
    });
    if (targets.length > 0) {
      return {
        kind: "tool_calls",
        calls: targets.map(({ request, quoteId }, i) => ({
          id: id(i),
          name: "recordInvoice",
          arguments: JSON.stringify({
            clientName: `${request.label} client`,
            quoteId,
            clientReference: null,
            description: null,
          }),
        })),
      };
    }
  }
  if (current.length === 0) {
    return {
      kind: "answer",
      content: `${PLANNER_BANNER} The conversation has no successful quote to record, so I called no tool.`,
    };
  }
  return { kind: "answer", content: summarize(current) };
}

/**
 * The planner's reply to a request that allows no tool call (`tool_choice: "none"`, e.g. the loop's
 * summary call at the cycle limit): the results of the latest prompt's tool calls so far, as the final
 * answer summarizes them, or a sentence saying none ran. Never tool calls, as the chat-completions API
 * never answers `none` with any.
 */
export function planAnswer(messages: PlannerMessage[]): PlannerReply {
  const lastUser = messages.map((m) => m.role).lastIndexOf("user");
  const current = callsOf(messages.slice(lastUser + 1));
  if (current.length > 0) return { kind: "answer", content: summarize(current) };
  return {
    kind: "answer",
    content: `${PLANNER_BANNER} No tool has run for this request, and this reply may call none, so I called no tool.`,
  };
}

/** An invoice id as recordInvoice returns it; a prompt naming one asks for getInvoice. */
const INVOICE_ID = /\binv_[0-9a-f]{24}\b/g;
/** A request to list the tenant's invoices: "List my invoices", "show all invoices", "which invoices …". */
const LIST_INTENT = /\b(list|show|see|display|which|what)\b[^.?!]*\binvoices\b|\bmy invoices\b/i;

/**
 * The read path: getInvoice for each invoice id the prompt names, else listInvoices when it asks for a
 * list (`limit` null: the tool's default); then the answer from their results. A read tool the request
 * does not offer (`offered`: the request's tool names; the caller lacks its permission) is not called:
 * the answer says so. Undefined when the prompt asks for neither.
 */
function planRead(
  prompt: string,
  current: SeenCall[],
  offered: readonly string[] | undefined,
  id: (index: number) => string,
): PlannerReply | undefined {
  const ids = [...new Set(prompt.match(INVOICE_ID) ?? [])];
  const wanted =
    ids.length > 0
      ? ids.map((invoiceId) => ({ name: "getInvoice", args: { invoiceId } as Record<string, unknown> }))
      : LIST_INTENT.test(prompt)
        ? [{ name: "listInvoices", args: { limit: null } as Record<string, unknown> }]
        : [];
  if (wanted.length === 0) return undefined;
  const withheld = wanted.find((call) => offered && !offered.includes(call.name));
  if (withheld) {
    return {
      kind: "answer",
      content: `${PLANNER_BANNER} The ${withheld.name} tool is not offered to you (your token lacks its permission), so I called no tool.`,
    };
  }
  const todo = wanted.filter((call) =>
    needsCall(current.filter((c) => c.name === call.name && c.args.invoiceId === call.args.invoiceId)),
  );
  if (todo.length > 0) {
    return {
      kind: "tool_calls",
      calls: todo.map((call, i) => ({ id: id(i), name: call.name, arguments: JSON.stringify(call.args) })),
    };
  }
  return { kind: "answer", content: summarize(current) };
}

/** One invoice as a summary line's text: id, client, gross total and currency (copied, never computed). */
function invoiceText(invoice: Record<string, unknown>): string {
  const gross = (invoice.grossTotal as { amount?: string } | undefined)?.amount;
  return `${String(invoice.invoiceId)} for ${String(invoice.clientName)}, gross ${String(gross)} ${String(invoice.currency)}`;
}

/** The summary line of a successful read call (listInvoices, getInvoice). */
function readLine(call: SeenCall, data: Record<string, unknown>): string {
  if (call.name === "getInvoice")
    return `- getInvoice: invoice ${invoiceText((data.invoice ?? {}) as Record<string, unknown>)}.`;
  const invoices = (data.invoices ?? []) as Array<Record<string, unknown>>;
  const more = data.hasMore ? " (the tenant has more)" : "";
  if (invoices.length === 0) return "- listInvoices: no invoices recorded yet.";
  return [
    `- listInvoices: ${invoices.length} invoice(s)${more}:`,
    ...invoices.map((invoice) => `  - ${invoiceText(invoice)}`),
  ].join("\n");
}

function summarize(calls: SeenCall[]): string {
  const lines = calls.map((call) => {
    const data = call.result?.data ?? {};
    if (call.result?.status !== "success") {
      return `- ${call.name} (${String(call.args.jurisdiction ?? call.args.quoteId ?? call.args.invoiceId ?? "")}): ${call.result?.status ?? "no result"} ${call.result?.error?.code ?? ""}: ${call.result?.error?.message ?? ""}`;
    }
    if (call.name === "listInvoices" || call.name === "getInvoice") return readLine(call, data);
    if (call.name === "calculateTax") {
      const money = (key: string) => (data[key] as { amount?: string } | undefined)?.amount;
      return `- ${String(data.jurisdiction)}: VAT at ${String(data.rate)} on ${money("subtotal")} ${String(data.currency)} is ${money("taxAmount")}, gross total ${money("grossTotal")}.`;
    }
    const invoice = (data.invoice ?? {}) as { invoiceId?: string; clientName?: string };
    return `- ${call.name}: invoice ${String(invoice.invoiceId)} for ${String(invoice.clientName)}${data.replayed ? " (already recorded)" : ""}.`;
  });
  return `${PLANNER_BANNER} Results:\n${lines.join("\n")}`;
}
