/**
 * How a tool call's arguments text is read, and how a validation issue is phrased for the model: the
 * rules the dispatcher (shared/agent/dispatcher.ts) and the turn's transcript (turn-resolution.ts) share.
 */

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
