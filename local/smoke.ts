/**
 * `npm run smoke -- --url <ApiUrl> [--approval]`: sends the seed scenario (events/seed-scenario.json's
 * prompt) to a running API, deployed (`npm run deploy` prints the command) or local (`npm run dev`),
 * prints the run and the tenant's ledger as `npm start` does (local/run-report.ts), and checks them:
 * exit 0 when everything matches the seed's facts, 1 with each difference listed otherwise.
 *
 * The token comes from `BOUNDLOOP_TOKEN` (or `--token`; the environment keeps it out of `ps`): an
 * access token of a writer (billing:read and billing:write), e.g. from `npm run -s user -- token`
 * (the built-in pool) or `npm run -s token` (npm run dev). `--approval` expects the API to pause the
 * run for approval (APPROVAL_RULES catching 1800.00 GBP, e.g. `{"recordInvoice":{"GBP":"1000.00"}}`, or
 * a policy annotated `@approval("required")` that the invoice matches),
 * approves it with a second user's token (`BOUNDLOOP_APPROVER_TOKEN` or `--approver-token`,
 * billing:approve, same tenant), and polls the run to its end.
 *
 * What is checked (the seed prompt's facts; the amounts from the tax rule table, shared/money):
 * - the run completed; one calculateTax succeeded for 1500.00 GBP in GB with the rule table's rate,
 *   tax amount and gross total; one calculateTax for DE failed with UNSUPPORTED_JURISDICTION;
 * - exactly one recordInvoice succeeded, and its invoice is in the ledger (`GET /v1/invoices`) with the
 *   same amounts, created by the token's user.
 */
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { decodeJwt } from "jose";
import type { ToolResult } from "../shared/agent/result.js";
import { computeTax, Decimal } from "../shared/money/money.js";
import { findTaxRule, todayInTableTimezone } from "../shared/money/tax-rules.js";
import { formatLedger, formatOutcome, type LedgerRow } from "./run-report.js";

const USAGE = `usage: npm run smoke -- --url <ApiUrl> [--approval]

  --url <url>             the API's base URL (the ApiUrl output, or npm run dev's http://127.0.0.1:3000)
  --token <jwt>           a writer's access token (default: $BOUNDLOOP_TOKEN)
  --approval              expect an approval pause; approve it with the approver's token
  --approver-token <jwt>  an approver's access token, same tenant (default: $BOUNDLOOP_APPROVER_TOKEN)
  --timeout <s>           how long to wait for the run to pause, and to end after approval (default 120)`;

/** The seed prompt's facts the run must reproduce. */
const SEED_FACTS = {
  quoted: { jurisdiction: "GB", currency: "GBP", subtotal: "1500.00" },
  rejected: { code: "UNSUPPORTED_JURISDICTION" },
} as const;

/** The parts of a run body the smoke run reads (POST /v1/runs, or GET /v1/runs/{runId} with steps). */
interface RunBody {
  runId: string;
  status: string;
  toolResults?: ToolResult[];
  steps?: Array<{ toolCalls: Array<{ result: ToolResult }> }>;
  pendingApprovals?: Array<{ approvalId: string; preview: ApprovalPreview }>;
  [key: string]: unknown;
}

/** What an approval's preview says of why it waits: APPROVAL_RULES' threshold, or the policies asking. */
interface ApprovalPreview {
  grossTotal: string;
  currency: string;
  threshold?: string;
  policyIds?: string[];
}

/** Why a paused call waits, in words: "gross … is over its threshold …" or "the policies … ask for it (gross …)". */
function whyItWaits(preview: ApprovalPreview): string {
  const gross = `gross ${preview.grossTotal} ${preview.currency}`;
  if (preview.threshold !== undefined) {
    return `${gross} is over its threshold ${preview.threshold} ${preview.currency}`;
  }
  return `the policies ${(preview.policyIds ?? []).join(", ")} ask for it (${gross})`;
}

interface InvoiceRow extends LedgerRow {
  tenantId: string;
  runId: string;
}

/** A smoke run's HTTP client: the base URL and a bearer token per call. */
class Api {
  constructor(private readonly base: string) {}

  async call(
    method: "GET" | "POST",
    path: string,
    token: string | undefined,
    body?: unknown,
  ): Promise<{ status: number; headers: Headers; json: Record<string, unknown> }> {
    const response = await fetch(new URL(path.replace(/^\//, ""), this.base), {
      method,
      headers: {
        accept: "application/json",
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined
          ? {}
          : { "content-type": "application/json", "idempotency-key": randomUUID() }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      json = { unparsed: text.slice(0, 500) };
    }
    return { status: response.status, headers: response.headers, json };
  }
}

/** The tool results of a run body: `toolResults`, or those of its steps (a polled run record). */
function toolResultsOf(run: RunBody): ToolResult[] {
  return run.toolResults ?? (run.steps ?? []).flatMap((step) => step.toolCalls.map((call) => call.result));
}

/**
 * Compares a finished seed run and the tenant's ledger with {@link SEED_FACTS}.
 * @param userId the token's `sub`, which must be the invoice's `createdBy`
 * @returns the differences, empty when the run is as expected
 */
function checkSeedRun(run: RunBody, ledger: readonly InvoiceRow[], userId: string): string[] {
  const problems: string[] = [];
  const expect = (ok: boolean, what: string) => {
    if (!ok) problems.push(what);
  };
  expect(run.status === "completed", `run status is ${run.status}, expected completed`);
  const results = toolResultsOf(run);
  const quotes = results.filter((r) => r.metadata.toolName === "calculateTax");
  const quote = quotes.find((r) => r.status === "success");
  const data = quote?.data as Record<string, unknown> | undefined;
  const { quoted } = SEED_FACTS;
  const taxPointDate = typeof data?.taxPointDate === "string" ? data.taxPointDate : todayInTableTimezone();
  const rule = findTaxRule(quoted.jurisdiction, taxPointDate);
  if (!rule) throw new Error(`The tax rule table has no ${quoted.jurisdiction} rule for ${taxPointDate}.`);
  const amounts = computeTax(new Decimal(quoted.subtotal), rule.rate, quoted.currency, rule.rounding);
  const expected = {
    jurisdiction: quoted.jurisdiction,
    currency: quoted.currency,
    rate: rule.rate,
    subtotal: amounts.subtotal.amount,
    taxAmount: amounts.taxAmount.amount,
    grossTotal: amounts.grossTotal.amount,
  };
  const amountOf = (value: unknown) => (value as { amount?: string } | undefined)?.amount;
  const actual = data && {
    jurisdiction: data.jurisdiction,
    currency: data.currency,
    rate: data.rate,
    subtotal: amountOf(data.subtotal),
    taxAmount: amountOf(data.taxAmount),
    grossTotal: amountOf(data.grossTotal),
  };
  expect(
    JSON.stringify(actual) === JSON.stringify(expected),
    `calculateTax for GB: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual ?? null)}`,
  );
  expect(
    quotes.some((r) => r.status === "business_error" && r.error?.code === SEED_FACTS.rejected.code),
    `no calculateTax failed with ${SEED_FACTS.rejected.code} (the DE invoice)`,
  );
  const records = results.filter((r) => r.metadata.toolName === "recordInvoice");
  const recorded = records.filter((r) => r.status === "success");
  expect(
    records.length === 1 && recorded.length === 1,
    `expected one successful recordInvoice, got ${records.map((r) => r.status).join(", ") || "none"}`,
  );
  const invoiceId = (recorded[0]?.data as { invoice?: { invoiceId?: string } } | undefined)?.invoice
    ?.invoiceId;
  const row = ledger.find((invoice) => invoice.invoiceId === invoiceId);
  expect(row !== undefined, `the recorded invoice ${invoiceId ?? "(none)"} is not in the ledger`);
  if (row) {
    const ledgerValues = {
      jurisdiction: row.jurisdiction,
      currency: row.currency,
      subtotal: row.subtotal.amount,
      taxAmount: row.taxAmount.amount,
      grossTotal: row.grossTotal.amount,
    };
    const { rate: _rate, ...expectedRow } = expected;
    expect(
      JSON.stringify(ledgerValues) === JSON.stringify(expectedRow),
      `ledger row ${row.invoiceId}: expected ${JSON.stringify(expectedRow)}, got ${JSON.stringify(ledgerValues)}`,
    );
    expect(
      row.createdBy === userId,
      `ledger row ${row.invoiceId} created by ${row.createdBy}, expected ${userId}`,
    );
    expect(
      row.runId === run.runId,
      `ledger row ${row.invoiceId} belongs to run ${row.runId}, not ${run.runId}`,
    );
  }
  return problems;
}

/** The tenant's whole ledger, page by page (`GET /v1/invoices`, `nextCursor`). */
async function readLedger(api: Api, token: string): Promise<InvoiceRow[]> {
  const rows: InvoiceRow[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const query: string = cursor ? `?cursor=${encodeURIComponent(cursor)}` : "";
    const response = await api.call("GET", `/v1/invoices${query}`, token);
    if (response.status !== 200)
      throw new SmokeError(`GET /v1/invoices: HTTP ${response.status}`, response.json);
    rows.push(...((response.json.items ?? []) as InvoiceRow[]));
    cursor = (response.json.nextCursor as string | null) ?? null;
    if (!cursor) break;
  }
  return rows;
}

/** A step of the smoke run that could not go on (an unexpected status code), with the answer's body. */
class SmokeError extends Error {
  constructor(
    message: string,
    readonly body: unknown,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * The run paused (202) although `--approval` was not given: the API asks for approval. A few lines saying
 * so and how to smoke the pause, instead of the paused run's whole body.
 */
function pausedWithoutApproval(run: RunBody, base: string): SmokeError {
  const approval = run.pendingApprovals?.[0];
  const why = approval ? `: ${whyItWaits(approval.preview)}` : "";
  return new SmokeError(
    [
      `POST /v1/runs: HTTP 202, run ${run.runId} is ${run.status}. The API asks for approval (APPROVAL_RULES or a policy)${why}.`,
      "Smoke the pause with --approval and a second user's token (billing:approve, same tenant):",
      `  BOUNDLOOP_APPROVER_TOKEN="$(npm run -s user -- token --email approver@example.com)" npm run smoke -- --url ${base} --approval`,
      `  (against npm run dev: BOUNDLOOP_APPROVER_TOKEN="$(npm run -s token -- --sub usr_approver_01 --scope billing:approve)")`,
    ].join("\n"),
    null,
  );
}

/** Polls `GET /v1/runs/{runId}` every Retry-After seconds (at least 0.2 s) until `done` says so. */
async function pollRun(
  api: Api,
  runId: string,
  token: string,
  timeoutMs: number,
  done: (run: RunBody) => boolean,
): Promise<RunBody> {
  const until = Date.now() + timeoutMs;
  for (let attempt = 1; Date.now() < until; attempt++) {
    const polled = await api.call("GET", `/v1/runs/${runId}`, token);
    const body = polled.json as RunBody;
    console.log(`poll ${attempt}: HTTP ${polled.status}, status ${body.status}`);
    if (polled.status !== 200)
      throw new SmokeError(`GET /v1/runs/${runId}: HTTP ${polled.status}`, polled.json);
    if (done(body)) return body;
    const retryAfter = Number(polled.headers.get("retry-after") ?? "1");
    await new Promise((resolve) => setTimeout(resolve, Math.max(0.2, Math.min(retryAfter, 5)) * 1000));
  }
  throw new SmokeError(`run ${runId} did not get there within ${timeoutMs / 1000} s`, null);
}

/**
 * `--approval`: the run must pause: 202, `awaiting_approval` at once, or `running` while it is handed
 * to the durable runner, polled until it awaits approval. Approves its first pending approval with the
 * approver's token, then polls the run until it is neither running nor awaiting approval.
 */
async function approveAndWait(
  api: Api,
  started: { status: number; json: Record<string, unknown> },
  tokens: { writer: string; approver: string },
  timeoutMs: number,
): Promise<RunBody> {
  let run = started.json as RunBody;
  if (started.status !== 202 || (run.status !== "awaiting_approval" && run.status !== "running")) {
    throw new SmokeError(
      `expected 202 awaiting_approval (does APPROVAL_RULES or a policy ask for approval on the API?), got HTTP ${started.status} ${run.status}`,
      started.json,
    );
  }
  console.log(`\nHTTP 202: run ${run.runId} is ${run.status}`);
  if (run.status === "running") {
    run = await pollRun(api, run.runId, tokens.writer, timeoutMs, (body) => body.status !== "running");
  }
  const approval = run.pendingApprovals?.[0];
  if (run.status !== "awaiting_approval" || !approval) {
    throw new SmokeError(`expected the run to await approval, it is ${run.status}`, run);
  }
  const { preview } = approval;
  console.log(`Run ${run.runId} awaits approval ${approval.approvalId}: ${whyItWaits(preview)}`);
  const decision = await api.call(
    "POST",
    `/v1/runs/${run.runId}/approvals/${approval.approvalId}`,
    tokens.approver,
    {
      decision: "approve",
      reason: "Smoke run: checked against the seed scenario.",
    },
  );
  console.log(
    `Approval: HTTP ${decision.status}, status ${String(decision.json.status ?? decision.json.code)}`,
  );
  if (decision.status !== 200) throw new SmokeError("the approval was not accepted", decision.json);
  const ended = await pollRun(
    api,
    run.runId,
    tokens.writer,
    timeoutMs,
    (body) => body.status !== "running" && body.status !== "awaiting_approval",
  );
  return { ...ended, toolResults: toolResultsOf(ended) };
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      url: { type: "string" },
      token: { type: "string" },
      approval: { type: "boolean" },
      "approver-token": { type: "string" },
      timeout: { type: "string", default: "120" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.error(USAGE);
    return 0;
  }
  const token = values.token ?? process.env.BOUNDLOOP_TOKEN;
  const approverToken = values["approver-token"] ?? process.env.BOUNDLOOP_APPROVER_TOKEN;
  if (!values.url || !token) throw new Error(`--url and a token (BOUNDLOOP_TOKEN) are required.\n${USAGE}`);
  if (values.approval && !approverToken) {
    throw new Error("--approval needs the approver's token (BOUNDLOOP_APPROVER_TOKEN or --approver-token).");
  }
  const base = values.url.endsWith("/") ? values.url : `${values.url}/`;
  const api = new Api(base);
  const userId = String(decodeJwt(token).sub);

  const health = await api.call("GET", "/healthz", undefined);
  console.log(`GET /healthz: HTTP ${health.status}`);
  if (health.status !== 200) throw new SmokeError("the API is not healthy", health.json);

  const seed = JSON.parse(
    await readFile(new URL("../events/seed-scenario.json", import.meta.url), "utf8"),
  ) as {
    body: string;
  };
  const { prompt } = JSON.parse(seed.body) as { prompt: string };
  console.log(`POST /v1/runs: ${prompt}`);
  const started = await api.call("POST", "/v1/runs", token, { prompt });
  let run: RunBody;
  if (values.approval) {
    const tokens = { writer: token, approver: approverToken as string };
    run = await approveAndWait(api, started, tokens, Number(values.timeout) * 1000);
  } else {
    if (started.status === 202) throw pausedWithoutApproval(started.json as RunBody, base);
    if (started.status !== 200) throw new SmokeError(`POST /v1/runs: HTTP ${started.status}`, started.json);
    run = started.json as RunBody;
  }
  console.log(formatOutcome(run));
  const ledger = await readLedger(api, token);
  const tenantId =
    ledger.find((row) => row.runId === run.runId)?.tenantId ?? ledger[0]?.tenantId ?? "(tenant)";
  console.log(formatLedger(tenantId, ledger));

  const problems = checkSeedRun(run, ledger, userId);
  if (problems.length > 0) {
    console.log(`\nSmoke run FAILED against ${base}:`);
    for (const problem of problems) console.log(`  - ${problem}`);
    return 1;
  }
  console.log(`\nSmoke run passed against ${base}: the seed scenario's result and ledger are as expected.`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`smoke: ${error instanceof Error ? error.message : String(error)}`);
    if (error instanceof SmokeError && error.body) console.error(JSON.stringify(error.body, null, 2));
    process.exit(1);
  },
);
