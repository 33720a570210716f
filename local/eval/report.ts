/**
 * The eval report (docs/evals.md, "Reading the report"): a terminal table, the JSON a later run compares
 * against, and markdown with each case's trajectory (every call, the backend's decision, its result).
 */
import { z } from "zod";
import type { AttemptReport, CaseReport, SuiteReport } from "./suite.js";

/**
 * How an attack went in one attempt: what the backend decided for each of the calls it made, counted.
 * Here, not in suite.ts, so a command line `npm run eval` refuses loads no part of the suite.
 */
export function attackOutcome(attempt: AttemptReport): string {
  const decisions = new Map<string, number>();
  for (const call of attempt.calls) {
    const key = `${call.name} ${call.decision === "ran" ? "ran" : call.decision.replace("refused: ", "refused ")}`;
    decisions.set(key, (decisions.get(key) ?? 0) + 1);
  }
  const parts = [...decisions].map(([key, count]) => (count > 1 ? `${key} ×${count}` : key));
  const flagged =
    attempt.ungrounded.length > 0 ? `; answer numbers flagged: ${attempt.ungrounded.join(", ")}` : "";
  return `${parts.join("; ") || "no calls"}; ${attempt.invoicesAdded} invoice(s) added${flagged}`;
}

const pct = (rate: number) => `${Math.round(rate * 100)}%`;

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** The first broken expectation or disallowed effect of a case, for its table row. */
function firstProblem(result: CaseReport): string {
  for (const attempt of result.attempts) {
    const problem = attempt.disallowed[0]
      ? `DISALLOWED ${attempt.disallowed[0].kind}: ${attempt.disallowed[0].detail}`
      : attempt.failures[0];
    if (problem) return problem.length > 110 ? `${problem.slice(0, 109)}…` : problem;
  }
  return "";
}

/** The terminal table: one row per case (pass rate, attempts, statuses), then the totals and the hostile figure. */
export function formatTable(report: SuiteReport): string {
  const rows = [["case", "result", "pass rate", "status", "problem"]];
  for (const c of report.cases) {
    const statuses = [...new Set(c.attempts.flatMap((a) => a.statuses))].join(",");
    rows.push([
      c.name,
      c.passed ? "pass" : "FAIL",
      `${c.passes}/${c.attempts.length} ${pct(c.passRate)}`,
      statuses,
      firstProblem(c),
    ]);
  }
  const { totals, hostile } = report;
  return [
    `Evals against ${report.model}`,
    "",
    table(rows),
    "",
    `${totals.passed}/${totals.cases} cases passed, ${totals.attempts} attempts, ${totals.disallowed} disallowed effects.`,
    hostile.runs > 0
      ? `Hostile suite: ${hostile.scenarios} scenarios × ${hostile.attacks} attacks, ${hostile.runs} runs, ${hostile.disallowed} disallowed effects.`
      : "",
  ]
    .join("\n")
    .trimEnd();
}

const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

/** The markdown report: the summary, the hostile attacks' outcomes, then each case's trajectory. */
export function formatMarkdown(report: SuiteReport): string {
  const lines = [
    `# Eval report: ${report.model}`,
    "",
    `Started ${report.startedAt}. ${report.totals.passed}/${report.totals.cases} cases passed over ${report.totals.attempts} attempts; ${report.totals.disallowed} disallowed effects.`,
    "",
    "| case | result | pass rate | statuses |",
    "| --- | --- | --- | --- |",
    ...report.cases.map(
      (c) =>
        `| ${cell(c.name)} | ${c.passed ? "pass" : "**FAIL**"} | ${c.passes}/${c.attempts.length} (${pct(c.passRate)}, needs ${pct(c.minPassRate)}) | ${[...new Set(c.attempts.flatMap((a) => a.statuses))].join(", ")} |`,
    ),
  ];
  const hostile = report.cases.filter((c) => c.attack);
  if (hostile.length > 0) {
    const h = report.hostile;
    lines.push(
      "",
      "## Hostile suite",
      "",
      `${h.scenarios} scenarios × ${h.attacks} attacks, ${h.runs} runs: **${h.disallowed} disallowed effects**.`,
      "",
    );
    lines.push("| scenario | attack | what the backend decided | disallowed |", "| --- | --- | --- | --- |");
    for (const c of hostile) {
      const first = c.attempts[0];
      const disallowed = c.attempts.flatMap((a) => a.disallowed).map((d) => `${d.kind}: ${d.detail}`);
      lines.push(
        `| ${c.scenario} | ${c.attack} | ${cell(first ? attackOutcome(first) : "")} | ${cell(disallowed.join("; ") || "0")} |`,
      );
    }
  }
  lines.push("", "## Trajectories");
  for (const c of report.cases) {
    const shown = c.attempts.find((a) => !a.passed) ?? c.attempts[0];
    if (!shown) continue;
    lines.push(
      "",
      `### ${c.name}`,
      "",
      `Attempt ${shown.attempt} of ${c.attempts.length}: ${shown.passed ? "passed" : "failed"}, status ${shown.statuses.join(" → ")}.`,
    );
    for (const problem of [
      ...shown.failures,
      ...shown.disallowed.map((d) => `disallowed ${d.kind}: ${d.detail}`),
    ])
      lines.push(`- ${cell(problem)}`);
    if (shown.calls.length > 0) {
      lines.push(
        "",
        "| run | cycle | call | arguments | decision | result |",
        "| --- | --- | --- | --- | --- | --- |",
      );
      for (const call of shown.calls) {
        lines.push(
          `| ${call.run} | ${call.cycle} | ${call.name} | \`${cell(call.arguments)}\` | ${cell(call.decision)} | ${cell(call.result)} |`,
        );
      }
    }
    if (shown.answer !== null) lines.push("", `Answer: ${cell(shown.answer)}`);
    if (shown.ungrounded.length > 0) lines.push("", `Ungrounded numbers: ${shown.ungrounded.join(", ")}`);
  }
  return `${lines.join("\n")}\n`;
}

/** What {@link compareReports} needs of an earlier report (read back from its JSON). */
const EarlierReport = z.object({
  model: z.string(),
  cases: z.array(z.object({ name: z.string(), passRate: z.number(), passed: z.boolean() }).passthrough()),
});

/**
 * An earlier report's JSON as {@link compareReports} reads it: `model` and `cases` (`name`, `passRate`,
 * `passed`), other fields kept. Exported so `npm run eval` can refuse a wrong `--compare` file before the
 * suite runs, not after.
 * @throws Error "Not an eval report: …" naming the first problem
 */
export function parseEarlierReport(earlier: unknown): z.infer<typeof EarlierReport> {
  const parsed = EarlierReport.safeParse(earlier);
  if (!parsed.success) throw new Error(`Not an eval report: ${parsed.error.issues[0]?.message ?? ""}`);
  return parsed.data;
}

/** A case whose result changed between two reports. */
export interface CaseChange {
  name: string;
  before: number | null;
  after: number | null;
  kind: "regression" | "improvement" | "new" | "gone";
}

/**
 * The cases whose pass rate changed from `earlier` (a report's JSON) to `later`: a regression is a case
 * whose pass rate fell, or that passed before and fails now; a case only in one of them is `new` (a
 * regression too when it fails) or `gone`.
 * @throws Error when `earlier` is not a report
 */
export function compareReports(earlier: unknown, later: SuiteReport): CaseChange[] {
  const before = new Map(parseEarlierReport(earlier).cases.map((c) => [c.name, c]));
  const changes: CaseChange[] = [];
  for (const c of later.cases) {
    const old = before.get(c.name);
    before.delete(c.name);
    if (!old) {
      changes.push({ name: c.name, before: null, after: c.passRate, kind: c.passed ? "new" : "regression" });
    } else if (c.passRate < old.passRate || (old.passed && !c.passed)) {
      changes.push({ name: c.name, before: old.passRate, after: c.passRate, kind: "regression" });
    } else if (c.passRate > old.passRate) {
      changes.push({ name: c.name, before: old.passRate, after: c.passRate, kind: "improvement" });
    }
  }
  for (const old of before.values())
    changes.push({ name: old.name, before: old.passRate, after: null, kind: "gone" });
  return changes;
}

/** The comparison as lines: each regression named first, then the other changes; "no change" when none. */
export function formatChanges(changes: CaseChange[]): string {
  if (changes.length === 0) return "Compared with the earlier report: no change.";
  const rate = (value: number | null) => (value === null ? "—" : pct(value));
  const order = { regression: 0, new: 1, improvement: 2, gone: 3 } as const;
  return [
    `Compared with the earlier report: ${changes.filter((c) => c.kind === "regression").length} regression(s).`,
    ...[...changes]
      .sort((a, b) => order[a.kind] - order[b.kind])
      .map((c) => `  ${c.kind.toUpperCase().padEnd(11)} ${c.name}: ${rate(c.before)} → ${rate(c.after)}`),
  ].join("\n");
}
