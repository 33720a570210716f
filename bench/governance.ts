/**
 * Governance figures of `npm run bench` (docs/policies.md, docs/quotas.md): what Cedar
 * policies and quotas cost a run.
 * - a Cedar decision's cost warm: one `authorize` of a recordInvoice call against a five-policy set
 *   (the worked examples' kinds: base permit, amount cap, daily total, approval, per-jurisdiction rule),
 *   µs per decision, p50 and p99 of {@link DECISIONS} after as many warm-up decisions;
 * - DynamoDB requests (per HTTP attempt, SDK middleware) of bench P3's keyed run (one recordInvoice, 2
 *   cycles) through the real handler: no policies and no quota limits; the five-policy set (its daily
 *   total keeps running totals); every quota limit set; both. Each variant has a container of its own
 *   whose first run is not counted (it reads the tenant's limits and policy set once, as a warm Lambda).
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { type ApiEvent, createHandler } from "../functions/api/app-handler.js";
import { quotedRecordInvoiceArgs } from "../local/fixtures.js";
import { createLambdaContext } from "../local/lambda-context.js";
import type { LocalModelServer } from "../local/model-server.js";
import { authorize, parsePolicySet, preparse } from "../shared/cedar/policy-set.js";
import { loadCedar } from "../shared/cedar/wasm.js";
import { loadConfig } from "../shared/config.js";
import { createApiDeps } from "../shared/deps.js";
import { ensureTable } from "../shared/store/table.js";
import { byOperation, type LoggedRequest, logRequests, operationsOf } from "./request-log.js";
import { quantile, round } from "./stats.js";

/** Five policies, one of each kind docs/policies.md works through; the bench's invoices pass them all. */
export const FIVE_POLICIES = `@id("base")
permit (principal, action, resource);

@id("gbp-invoice-cap")
forbid (principal, action == Action::"recordInvoice", resource)
when { context.facts.currency == "GBP" && context.facts.grossMinor > 500000 };

@id("gbp-daily-total")
forbid (principal, action == Action::"recordInvoice", resource)
when { context.facts.currency == "GBP" && context.totals.tenantDay.grossMinor > 100000000000 };

@id("gbp-approval")
@approval("required")
permit (principal, action == Action::"recordInvoice", resource)
when { context.facts.currency == "GBP" && context.facts.grossMinor >= 100000000 };

@id("bd-approval")
@approval("required")
permit (principal, action == Action::"recordInvoice", resource)
when { context.facts.jurisdiction == "BD" };
`;

/**
 * Every quota limit set, high enough that no bench run is refused; the cost limits price calls by
 * gpt-4o-mini's list price (the configured model, OPENAI_MODEL's default).
 */
export const QUOTA_LIMITS = {
  USER_RUNS_PER_MINUTE: "100000",
  TENANT_RUNS_PER_MINUTE: "100000",
  TENANT_CONCURRENT_RUNS: "1000",
  USER_TOKENS_PER_DAY: "1000000000",
  TENANT_TOKENS_PER_DAY: "1000000000",
  USER_COST_PER_DAY: "100000",
  TENANT_COST_PER_DAY: "1000000",
  MODEL_PRICES: JSON.stringify({
    "gpt-4o-mini": { inputPerMillion: "0.15", outputPerMillion: "0.60", currency: "USD" },
  }),
};

/** Decisions timed (and as many warm-up decisions first). */
const DECISIONS = 5_000;

/** A decision's cost, µs. */
export interface DecisionCost {
  policies: number;
  p50Us: number;
  p99Us: number;
  decisions: number;
}

/**
 * Times `authorize` of a recordInvoice call (facts, totals and input as the decision service passes
 * them) against {@link FIVE_POLICIES}, warm.
 * @throws Error when the set does not parse or a decision is not "allow"
 */
export async function benchDecision(decisions = DECISIONS): Promise<DecisionCost> {
  const engine = await loadCedar();
  const parsed = parsePolicySet(engine, FIVE_POLICIES);
  if (!parsed.ok) throw new Error(`five policies: ${JSON.stringify(parsed.issues)}`);
  preparse(engine, parsed.set);
  const total = { count: 3, grossMinor: 36_000 };
  const request = {
    principal: { type: "User", id: "usr_bench" },
    action: { type: "Action", id: "recordInvoice" },
    resource: { type: "Tenant", id: "tenant_bench" },
    context: {
      input: { quoteId: "q_0123456789", clientReference: "PO-1" },
      facts: { currency: "GBP", grossMinor: 12_000, netMinor: 10_000, jurisdiction: "GB" },
      totals: { userDay: total, tenantDay: total, userHour: total, tenantHour: total },
    },
    entities: [
      {
        uid: { type: "User", id: "usr_bench" },
        attrs: { tenant: "tenant_bench", permissions: ["billing:write"] },
        parents: [],
      },
    ],
  };
  const times: number[] = [];
  for (let n = -decisions; n < decisions; n++) {
    const started = performance.now();
    const answer = authorize(engine, parsed.set, request);
    const us = (performance.now() - started) * 1000;
    if (answer.decision !== "allow") throw new Error(`decision: ${JSON.stringify(answer)}`);
    if (n >= 0) times.push(us);
  }
  return {
    policies: parsed.set.policies.length,
    p50Us: round(quantile(times, 0.5)),
    p99Us: round(quantile(times, 0.99)),
    decisions,
  };
}

/** The seed scenario's API event (events/seed-scenario.json), a fresh copy. */
export function seedEventOf(): APIGatewayProxyEventV2 & {
  requestContext: { authorizer: { jwt: { claims: Record<string, string> } } };
} {
  return JSON.parse(readFileSync(new URL("../events/seed-scenario.json", import.meta.url), "utf8"));
}

/** DynamoDB requests of one keyed run, by operation. */
export interface RequestCount {
  total: number;
  byOperation: Record<string, number>;
}

/** The variants of {@link benchGovernanceRequests}: configuration variables over the defaults. */
export const REQUEST_VARIANTS: Record<string, Record<string, string>> = {
  "quotas off (no policies)": { QUOTAS: "off" },
  "no policies, no quota limits": {},
  "five policies without the daily total (no running totals)": {
    POLICIES: FIVE_POLICIES.replace(/@id\("gbp-daily-total"\)[^;]*;/, ""),
  },
  "five policies (running totals)": { POLICIES: FIVE_POLICIES },
  "every quota limit": QUOTA_LIMITS,
  "five policies and every quota limit": { POLICIES: FIVE_POLICIES, ...QUOTA_LIMITS },
};

/** Counts by operation. */
function countOf(log: readonly LoggedRequest[]): RequestCount {
  return { total: log.length, byOperation: byOperation(operationsOf(log)) };
}

/**
 * DynamoDB requests of bench P3's keyed run under each of {@link REQUEST_VARIANTS} (a container each,
 * warmed by one uncounted run; `runs` counted runs, the median's request list is reported: every run of
 * a variant makes the same requests).
 * @throws Error when a run does not answer 200 in 2 cycles, or two counted runs differ
 */
export async function benchGovernanceRequests(
  dynamoEndpoint: string,
  model: LocalModelServer,
  runs = 3,
): Promise<Record<string, RequestCount>> {
  const seed = seedEventOf();
  const claims = seed.requestContext.authorizer.jwt.claims;
  const results: Record<string, RequestCount> = {};
  for (const [name, env] of Object.entries(REQUEST_VARIANTS)) {
    const { QUOTAS, ...settings } = env;
    const config = loadConfig({
      DYNAMODB_ENDPOINT: dynamoEndpoint,
      OPENAI_BASE_URL: model.baseURL,
      TABLE_NAME: `bench-governance-${randomUUID()}`,
      POWERTOOLS_LOG_LEVEL: "SILENT",
      ...settings,
    });
    const deps = createApiDeps(config, QUOTAS === "off" ? { quotas: false } : {});
    await ensureTable(deps.ddb, config.table.name);
    const log = logRequests(deps.ddb);
    const handler = createHandler(deps);
    const counts: RequestCount[] = [];
    for (let n = -1; n < runs; n++) {
      const args = await quotedRecordInvoiceArgs(deps, {
        tenantId: claims.tenant_id as string,
        userId: claims.sub as string,
      });
      model.script([
        { toolCalls: [{ id: "call_1", name: "recordInvoice", arguments: args }] },
        { content: "Recorded." },
      ]);
      const event = structuredClone(seed);
      event.headers = { ...event.headers, "idempotency-key": `bench-governance-${randomUUID()}` };
      event.body = JSON.stringify({ prompt: "Record the invoice." });
      log.take();
      const result = (await handler(
        event as unknown as ApiEvent,
        createLambdaContext(29_000),
      )) as APIGatewayProxyStructuredResultV2;
      const body = JSON.parse(String(result.body)) as { cycles?: number; status?: string };
      if (result.statusCode !== 200 || body.cycles !== 2 || body.status !== "completed")
        throw new Error(`${name}: HTTP ${result.statusCode} ${result.body}`);
      if (n >= 0) counts.push(countOf(log.take()));
    }
    const totals = new Set(counts.map((count) => count.total));
    if (totals.size !== 1) throw new Error(`${name}: runs made ${[...totals].join(", ")} requests`);
    results[name] = counts[0] as RequestCount;
    deps.ddb.destroy();
  }
  return results;
}
