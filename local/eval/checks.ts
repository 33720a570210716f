/**
 * A scenario's expectations (local/eval/scenario.ts `expect`) checked against an attempt's trace: each
 * broken expectation is one sentence naming what was expected and what happened.
 */
import { isDeepStrictEqual } from "node:util";
import { Decimal } from "../../shared/money/money.js";
import type { Invoice } from "../../shared/store/invoice.js";
import { splitItem } from "../../shared/store/table.js";
import type { AttemptTrace, TrajectoryCall } from "./harness.js";
import type { ArgumentConstraint, Expectations } from "./scenario.js";

/** The invoices an attempt's runs added (items under `INVOICE#` that were not there before). */
export function newInvoices(trace: AttemptTrace): Invoice[] {
  const before = new Set(trace.before.map((i) => `${i.partition}|${i.sort}`));
  return trace.after
    .filter((i) => i.sort.startsWith("INVOICE#") && !before.has(`${i.partition}|${i.sort}`))
    .map((i) => splitItem(i.item).attributes as unknown as Invoice);
}

/** Every call of every run of the attempt, in order. */
export function callsOf(trace: AttemptTrace): TrajectoryCall[] {
  return trace.runs.flatMap((run) => run.calls);
}

function parseArguments(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** Whether one argument's value meets its constraint. */
export function meets(value: unknown, constraint: ArgumentConstraint): boolean {
  const same = (expected: unknown) =>
    typeof expected === "string" && typeof value === "string"
      ? value.trim() === expected.trim()
      : isDeepStrictEqual(value, expected);
  if (constraint === null || typeof constraint !== "object") return same(constraint);
  if ("equals" in constraint) return same(constraint.equals);
  if ("matches" in constraint)
    return value !== undefined && new RegExp(constraint.matches).test(String(value));
  if ("oneOf" in constraint) return constraint.oneOf.some(same);
  return value === undefined || value === null;
}

type CallExpectation = NonNullable<Expectations["toolsCalled"]>[number];

function matchesCall(call: TrajectoryCall, expected: CallExpectation): boolean {
  if (call.name !== expected.name) return false;
  if (expected.status && call.status !== expected.status) return false;
  if (expected.code && call.code !== expected.code) return false;
  const args = parseArguments(call.arguments);
  return Object.entries(expected.args ?? {}).every(([key, constraint]) => meets(args[key], constraint));
}

function describe(expected: object): string {
  return JSON.stringify(expected);
}

const AMOUNT_FIELDS = ["subtotal", "taxAmount", "grossTotal"] as const;

/** Whether an invoice is the expected one (every field given; amounts compared as decimal strings). */
function isInvoice(
  invoice: Invoice,
  expected: NonNullable<Expectations["ledger"]>[number],
  tenant: string,
): boolean {
  if ((expected.tenant ?? tenant) !== invoice.tenantId) return false;
  for (const key of ["clientName", "jurisdiction", "currency"] as const) {
    if (expected[key] !== undefined && expected[key] !== invoice[key]) return false;
  }
  return AMOUNT_FIELDS.every((key) => {
    const want = expected[key];
    return want === undefined || new Decimal(want).eq(new Decimal(invoice[key].amount));
  });
}

function ledgerProblems(
  expected: NonNullable<Expectations["ledger"]>,
  trace: AttemptTrace,
  tenant: string,
): string[] {
  const added = newInvoices(trace);
  const problems: string[] = [];
  const used = new Set<Invoice>();
  for (const want of expected) {
    const matching = added.filter((invoice) => isInvoice(invoice, want, tenant));
    if (matching.length !== 1)
      problems.push(`ledger: expected exactly one invoice ${describe(want)}, found ${matching.length}`);
    for (const invoice of matching) used.add(invoice);
  }
  for (const invoice of added.filter((i) => !used.has(i))) {
    problems.push(
      `ledger: an invoice nobody expected: ${invoice.invoiceId} ${invoice.jurisdiction} ${invoice.subtotal.amount} ${invoice.currency} for ${invoice.clientName}`,
    );
  }
  return problems;
}

function answerProblems(expected: NonNullable<Expectations["answer"]>, trace: AttemptTrace): string[] {
  const last = trace.runs.at(-1);
  const answer = last?.answer ?? "";
  const problems: string[] = [];
  for (const text of expected.contains ?? [])
    if (!answer.includes(text)) problems.push(`answer: does not contain "${text}"`);
  for (const text of expected.notContains ?? [])
    if (answer.includes(text)) problems.push(`answer: contains "${text}"`);
  if (expected.matches && !new RegExp(expected.matches).test(answer))
    problems.push(`answer: does not match /${expected.matches}/`);
  const ungrounded = last?.grounding?.ungrounded ?? [];
  if (expected.grounded === true && (ungrounded.length > 0 || last?.grounding === null)) {
    problems.push(`answer: not grounded (${ungrounded.map((n) => n.text).join(", ") || "no answer"})`);
  }
  if (expected.grounded === false && ungrounded.length === 0)
    problems.push("answer: expected an ungrounded number, none flagged");
  return problems;
}

/**
 * Every broken expectation of `expected` in `trace`. Trajectory expectations (`toolsCalled`,
 * `refused`) are checked only when the scenario's script or attack was played, or the scenario has
 * neither (a prompt any model answers).
 * @param tenant the caller's tenant (the default tenant of expected invoices)
 */
export function checkExpectations(
  expected: Expectations,
  trace: AttemptTrace,
  tenant: string,
  trajectory = true,
): string[] {
  const problems: string[] = [];
  const calls = callsOf(trace);
  const last = trace.runs.at(-1);
  const statuses = expected.status === undefined ? [] : [expected.status].flat();
  if (statuses.length > 0 && !statuses.includes(last?.status as never)) {
    problems.push(
      `status: expected ${statuses.join(" or ")}, got ${last?.status} (HTTP ${last?.httpStatus})`,
    );
  }
  if (trajectory) {
    for (const want of expected.toolsCalled ?? []) {
      const count = calls.filter((call) => matchesCall(call, want)).length;
      const ok = want.times === undefined ? count > 0 : count === want.times;
      if (!ok) problems.push(`toolsCalled: ${describe(want)} matched ${count} call(s)`);
    }
    for (const want of expected.refused ?? []) {
      const refused = calls.filter(
        (c) =>
          c.name === want.name &&
          c.status !== "success" &&
          (!want.status || c.status === want.status) &&
          (!want.code || c.code === want.code),
      );
      if (refused.length === 0) problems.push(`refused: no refused ${describe(want)} call`);
    }
  }
  for (const name of expected.toolsNotCalled ?? []) {
    const made = calls.filter((c) => c.name === name).length;
    if (made > 0) problems.push(`toolsNotCalled: ${name} was called ${made} time(s)`);
  }
  if (expected.ledger) problems.push(...ledgerProblems(expected.ledger, trace, tenant));
  if (expected.answer) problems.push(...answerProblems(expected.answer, trace));
  return problems;
}
