import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { expect } from "vitest";
import { RunRecordSchema } from "../../functions/api/contract.js";
import { eventForRoute } from "../../local/durable-runner.js";
import type { DurableStack } from "./durable.js";
import { runPathEvent } from "./durable.js";
import { runEvent } from "./idempotency.js";
import { tenantKeys } from "./reliability.js";
import { seedEvent } from "./stack.js";

/** APPROVAL_RULES that catch the seed scenario's GB invoice (gross 1800.00 GBP). */
export const GBP_RULES = JSON.stringify({ recordInvoice: { GBP: "1000.00" } });

/** The seed scenario's prompt. */
export const SEED_PROMPT = JSON.parse(seedEvent().body ?? "{}").prompt as string;

type Result = APIGatewayProxyStructuredResultV2;
/** The JSON body of a response. */
export const json = (response: Result) => JSON.parse(response.body ?? "") as Record<string, unknown>;

/** An API Gateway event of user `sub` of `tenantId` with `scope`, on `method path` with an optional body. */
export function userEvent(
  user: { sub: string; tenantId: string; scope: string },
  method: string,
  path: string,
  body?: unknown,
): APIGatewayProxyEventV2 {
  const base = seedEvent({ claims: { sub: user.sub, tenant_id: user.tenantId, scope: user.scope } });
  const event = eventForRoute(base, method, path);
  if (body !== undefined) event.body = JSON.stringify(body);
  return event;
}

/** `POST /v1/runs/{runId}/approvals/{approvalId}` as `approver` (default: usr_approver, billing:approve). */
export function decide(
  stack: DurableStack,
  target: { runId: string; approvalId: string; tenantId: string },
  decision: "approve" | "reject",
  options: { sub?: string; scope?: string; reason?: string } = {},
): Promise<Result> {
  return stack.invoke(
    userEvent(
      {
        sub: options.sub ?? "usr_approver",
        tenantId: target.tenantId,
        scope: options.scope ?? "billing:approve",
      },
      "POST",
      `/v1/runs/${target.runId}/approvals/${target.approvalId}`,
      { decision, ...(options.reason ? { reason: options.reason } : {}) },
    ),
  );
}

/**
 * Polls `GET /v1/runs/{runId}` (as the run's user usr_idem) until its status is not one of `passing`;
 * returns the record.
 */
export async function pollUntil(
  stack: DurableStack,
  runId: string,
  tenantId: string,
  passing: readonly string[] = ["running", "awaiting_approval"],
  timeoutMs = 25_000,
) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const response = await stack.invoke(runPathEvent(runId, tenantId));
    expect(response.statusCode).toBe(200);
    const run = RunRecordSchema.parse(json(response));
    if (!passing.includes(run.status)) return run;
    if (Date.now() > until) throw new Error(`run ${runId} still ${run.status} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * What the approval tests do with `stack` (a file's stack: read when called, so it may be one whose
 * `beforeAll` has not run yet): `invoices` lists a tenant's invoice keys, `pausedRun` starts the seed
 * scenario as a durable run of `tenantId` and waits until it pauses for approval.
 */
export function approvalRuns(stack: DurableStack) {
  const invoices = (tenantId: string) =>
    tenantKeys(stack.deps.ddb, stack.config.table.name, tenantId, ["INVOICE#"]);

  /** Starts the seed scenario as a durable run for `tenantId` and waits until it pauses for approval. */
  async function pausedRun(tenantId: string) {
    const event = runEvent({ tenantId, prompt: SEED_PROMPT });
    event.headers = { ...event.headers, prefer: "respond-async" };
    const started = RunRecordSchema.parse(json(await stack.invoke(event)));
    const run = await pollUntil(stack, started.runId, tenantId, ["running"]);
    expect(run.status).toBe("awaiting_approval");
    const approval = run.pendingApprovals?.[0];
    if (!approval) throw new Error("no pending approval");
    return { run, approval, target: { runId: run.runId, approvalId: approval.approvalId, tenantId } };
  }

  return { invoices, pausedRun };
}

/** The tool results of a run's audit steps. */
export const resultsOf = (run: { steps: Array<{ toolCalls: Array<{ result: unknown }> }> }) =>
  run.steps.flatMap((step) => step.toolCalls.map((call) => call.result)) as Array<
    ReturnType<typeof RunRecordSchema.parse>["steps"][number]["toolCalls"][number]["result"]
  >;
