/**
 * Runs a set of scenarios (docs/evals.md): each scenario `repeat` times, a hostile one once per attack of
 * its `attacks` (the scenario × attack matrix), every attempt checked against the scenario's expectations
 * and the oracle's disallowed effects. The result is the report local/eval/report.ts prints and compares.
 */
import { ATTACK_NAMES, type AttackName } from "./attacks.js";
import { checkExpectations, newInvoices } from "./checks.js";
import { type AttemptContext, type AttemptTrace, runAttempt } from "./harness.js";
import { type DisallowedEffect, disallowedEffects } from "./oracle.js";
import { governanceEffects } from "./oracle-governance.js";
import type { Scenario } from "./scenario.js";

/** One call of a trajectory as the report shows it: what was asked, what the backend decided, what came back. */
export interface ReportedCall {
  run: number;
  cycle: number;
  name: string;
  arguments: string;
  decision: string;
  result: string;
}

/** One attempt: whether it passed, the broken expectations, the disallowed effects, its trajectory. */
export interface AttemptReport {
  attempt: number;
  passed: boolean;
  failures: string[];
  disallowed: DisallowedEffect[];
  statuses: string[];
  answer: string | null;
  ungrounded: string[];
  invoicesAdded: number;
  calls: ReportedCall[];
  durationMs: number;
}

/**
 * One case of the report: a scenario, or a hostile scenario with one attack (`name` is then
 * `<scenario> × <attack>`), its pass rate over its attempts and whether that meets `minPassRate`.
 */
export interface CaseReport {
  name: string;
  scenario: string;
  attack: AttackName | null;
  tags: string[];
  attempts: AttemptReport[];
  passes: number;
  passRate: number;
  minPassRate: number;
  passed: boolean;
}

/** A whole run of the suite: the model, every case, and the hostile figure. */
export interface SuiteReport {
  version: 1;
  startedAt: string;
  model: string;
  cases: CaseReport[];
  totals: { cases: number; passed: number; attempts: number; disallowed: number };
  hostile: { scenarios: number; attacks: number; runs: number; disallowed: number };
}

/** Options of {@link runSuite}: `repeat` overrides every scenario's; `onCase` hears each case as it ends. */
export interface SuiteOptions {
  context: AttemptContext;
  model: string;
  repeat?: number | undefined;
  onCase?: ((result: CaseReport) => void) | undefined;
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** A one-line summary of a tool result for the report (the backend's own values). */
function summarize(name: string, data: unknown): string {
  const d = (data ?? {}) as Record<string, unknown>;
  const money = (key: string) => (d[key] as { amount?: string } | undefined)?.amount;
  if (name === "calculateTax") {
    return `${String(d.jurisdiction)} ${money("subtotal")} ${String(d.currency)}: tax ${money("taxAmount")}, gross ${money("grossTotal")}, ${String(d.quoteId)}`;
  }
  if (name === "recordInvoice" || name === "getInvoice") {
    const invoice = (d.invoice ?? {}) as {
      invoiceId?: string;
      clientName?: string;
      grossTotal?: { amount: string };
    };
    return `invoice ${invoice.invoiceId} for ${clip(String(invoice.clientName), 40)}, gross ${invoice.grossTotal?.amount}${d.replayed ? " (replayed)" : ""}`;
  }
  if (name === "listInvoices") return `${String(d.count)} invoice(s)${d.hasMore ? ", more" : ""}`;
  return clip(JSON.stringify(data), 80);
}

function reportedCalls(trace: AttemptTrace): ReportedCall[] {
  return trace.runs.flatMap((run, index) =>
    run.calls.map((call) => ({
      run: index + 1,
      cycle: call.cycle,
      name: call.name,
      arguments: clip(call.arguments, 160),
      decision: call.status === "success" ? "ran" : `refused: ${call.status} ${call.code ?? ""}`.trim(),
      result:
        call.status === "success"
          ? summarize(call.name, call.result.data)
          : clip(call.result.error?.message ?? "", 140),
    })),
  );
}

async function attempt(
  options: SuiteOptions,
  scenario: Scenario,
  attack: AttackName | null,
  n: number,
): Promise<AttemptReport> {
  const started = performance.now();
  const trace = await runAttempt(options.context, scenario, attack ?? undefined);
  const disallowed = [
    ...disallowedEffects(trace, scenario.caller),
    ...(await governanceEffects(trace, scenario)),
  ];
  // The trajectory a script or attack decides is checked only when it was played.
  const trajectory = trace.scripted || (!scenario.script && !scenario.attacks);
  const failures = checkExpectations(scenario.expect, trace, scenario.caller.tenant, trajectory);
  const last = trace.runs.at(-1);
  return {
    attempt: n,
    passed: failures.length === 0 && disallowed.length === 0,
    failures,
    disallowed,
    statuses: trace.runs.map((run) => run.status),
    answer: last?.answer ?? null,
    ungrounded: (last?.grounding?.ungrounded ?? []).map((number) => number.text),
    invoicesAdded: newInvoices(trace).length,
    calls: reportedCalls(trace),
    durationMs: Math.round(performance.now() - started),
  };
}

/** The attacks a scenario is run with: none for a plain scenario. */
function attacksOf(scenario: Scenario): Array<AttackName | null> {
  if (!scenario.attacks) return [null];
  return scenario.attacks === "all" ? [...ATTACK_NAMES] : scenario.attacks;
}

/**
 * Runs every scenario (each of its attacks, each `repeat` times) one attempt at a time, and reports.
 * A scenario whose fixtures or settings are invalid throws: that is the file's error, not a result.
 */
export async function runSuite(scenarios: readonly Scenario[], options: SuiteOptions): Promise<SuiteReport> {
  const startedAt = new Date().toISOString();
  const cases: CaseReport[] = [];
  for (const scenario of scenarios) {
    for (const attack of attacksOf(scenario)) {
      const repeat = options.repeat ?? scenario.repeat ?? 1;
      const attempts: AttemptReport[] = [];
      for (let n = 1; n <= repeat; n++) attempts.push(await attempt(options, scenario, attack, n));
      const passes = attempts.filter((a) => a.passed).length;
      const minPassRate = scenario.minPassRate ?? 1;
      const result: CaseReport = {
        name: attack ? `${scenario.name} × ${attack}` : scenario.name,
        scenario: scenario.name,
        attack,
        tags: scenario.tags,
        attempts,
        passes,
        passRate: passes / attempts.length,
        minPassRate,
        passed: passes / attempts.length >= minPassRate && attempts.every((a) => a.disallowed.length === 0),
      };
      cases.push(result);
      options.onCase?.(result);
    }
  }
  const hostile = cases.filter((c) => c.attack !== null);
  const disallowedIn = (list: CaseReport[]) =>
    list.reduce((sum, c) => sum + c.attempts.reduce((s, a) => s + a.disallowed.length, 0), 0);
  return {
    version: 1,
    startedAt,
    model: options.model,
    cases,
    totals: {
      cases: cases.length,
      passed: cases.filter((c) => c.passed).length,
      attempts: cases.reduce((sum, c) => sum + c.attempts.length, 0),
      disallowed: disallowedIn(cases),
    },
    hostile: {
      scenarios: new Set(hostile.map((c) => c.scenario)).size,
      attacks: new Set(hostile.map((c) => c.attack)).size,
      runs: hostile.reduce((sum, c) => sum + c.attempts.length, 0),
      disallowed: disallowedIn(hostile),
    },
  };
}
