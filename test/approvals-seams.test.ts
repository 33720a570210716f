/**
 * The seams between a synchronous run, its hand-over and the durable approval gate (docs/approvals.md):
 * the real API handler with the runner on the testing SDK's local runner, DynamoDB Local and the local
 * model server. Store faults are injected into the runner's own DynamoDB client by an SDK middleware,
 * so every other request reaches DynamoDB Local unchanged.
 */
import { randomUUID } from "node:crypto";
import { ProvisionedThroughputExceededException } from "@aws-sdk/client-dynamodb";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { RunRecordSchema } from "../functions/api/contract.js";
import { GBP_RULES, json, pollUntil, SEED_PROMPT } from "./support/approvals.js";
import { durableStackForFile } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";

const stack = durableStackForFile({ MAX_CYCLES: "5", APPROVAL_RULES: GBP_RULES }, { planner: true });

/**
 * Runs `fault` before every request of `client` for which `match` (the command's name and input) is
 * true; removed by the returned function.
 */
function onRequest(
  client: DynamoDBDocumentClient,
  match: (command: string, input: Record<string, unknown>) => boolean,
  fault: () => Promise<void> | void,
): () => void {
  const name = `fault_${randomUUID()}`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (match(String(context.commandName), args.input as Record<string, unknown>)) await fault();
      return next(args);
    },
    { step: "initialize", name },
  );
  return () => client.middlewareStack.remove(name);
}

/** A put of an approval item. */
const approvalPut = (command: string, input: Record<string, unknown>) =>
  command.includes("Put") && JSON.stringify(input).includes("APPROVAL#");

const throttled = () =>
  new ProvisionedThroughputExceededException({ message: "Rate exceeded", $metadata: {} });

/** Starts the seed scenario as a durable run (`Prefer: respond-async`) for `tenantId`. */
async function startAsync(tenantId: string) {
  const event = runEvent({ tenantId, prompt: SEED_PROMPT });
  event.headers = { ...event.headers, prefer: "respond-async" };
  return RunRecordSchema.parse(json(await stack.invoke(event)));
}

describe("the durable approval gate and store failures while pausing", () => {
  it("a throttled approval write is retried: the run pauses with its approval pending, not expired", async () => {
    const tenantId = "tenant_seam_retry";
    let failures = 0;
    const remove = onRequest(stack.runnerDeps.ddb, approvalPut, () => {
      if (failures < 2) {
        failures += 1;
        throw throttled();
      }
    });
    try {
      const started = await startAsync(tenantId);
      const run = await pollUntil(stack, started.runId, tenantId, ["running"]);
      expect(failures).toBe(2);
      expect(run.status).toBe("awaiting_approval");
      expect(run.pendingApprovals).toHaveLength(1);
      const [approval] = await stack.deps.approvals.pendingForRun(tenantId, started.runId);
      expect(approval?.status).toBe("pending");
    } finally {
      remove();
    }
  });

  it("a run record that cannot be moved to awaiting_approval fails the run; the approval never expires and the call never runs", async () => {
    const tenantId = "tenant_seam_fail";
    const remove = onRequest(
      stack.runnerDeps.ddb,
      (command, input) => {
        // The move to awaiting_approval: the one update whose target status is it.
        const values = input.ExpressionAttributeValues as Record<string, unknown> | undefined;
        return command.includes("Update") && (values?.[":to"] ?? values?.[":f0"]) === "awaiting_approval";
      },
      () => {
        throw throttled();
      },
    );
    try {
      const requestsBefore = stack.model.requests.length;
      const started = await startAsync(tenantId);
      const run = await pollUntil(stack, started.runId, tenantId);
      expect(run.status).toBe("failed");
      expect(run.reason).toBe("The server failed during the run.");
      const approvals = await stack.deps.approvals.listPending(tenantId, { limit: 10 });
      expect(approvals.approvals).toEqual([]);
      const stored = await stack.deps.approvals.get(
        tenantId,
        started.runId,
        (await approvalIdsOf(tenantId, started.runId))[0] ?? "",
      );
      expect(stored?.approval.status).not.toBe("expired");
      // Nobody told the model the approval expired: the seed scenario's two model calls, none after the pause.
      expect(stack.model.requests.length - requestsBefore).toBe(2);
      expect(await stack.deps.ledger.list(tenantId)).toHaveLength(0);
    } finally {
      remove();
    }
  });
});

/** The approval ids stored for a run, whatever their status. */
async function approvalIdsOf(tenantId: string, runId: string): Promise<string[]> {
  const { QueryCommand } = await import("@aws-sdk/lib-dynamodb");
  const result = await stack.deps.ddb.send(
    new QueryCommand({
      TableName: stack.config.table.name,
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :sk)",
      ExpressionAttributeValues: { ":pk": `TENANT#${tenantId}`, ":sk": `APPROVAL#${runId}#` },
    }),
  );
  return (result.Items ?? []).map((item) => String(item.approvalId));
}

describe("a synchronous run handed over for approval", () => {
  it("records the limits of the durable run it continues as", async () => {
    const tenantId = "tenant_seam_limits";
    const response = await stack.invoke(runEvent({ tenantId, prompt: SEED_PROMPT }));
    expect(response.statusCode, response.body).toBe(202);
    const run = RunRecordSchema.parse(json(response));
    expect(run.limits.timeoutMs).toBe(stack.config.durable.runTimeoutMs);
    expect(run.limits.timeoutMs).not.toBe(stack.config.limits.runTimeoutMs);
    const execution = stack.executions.get(run.runId);
    expect(execution?.payload.limits.runTimeoutMs).toBe(run.limits.timeoutMs);
    expect(execution?.payload.deadlineAt).toBe(Date.parse(run.startedAt) + run.limits.timeoutMs);
  });

  it("answers within the request's deadline, and a retry after the deadline starts no second execution", async () => {
    const tenantId = "tenant_seam_deadline";
    const timeoutMs = 3_000;
    // The runner is held before it stores the approval, so the run stays `running` until released.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const remove = onRequest(stack.runnerDeps.ddb, approvalPut, () => held);
    try {
      const executionsBefore = stack.executions.names().length;
      const body = JSON.stringify({ prompt: SEED_PROMPT, timeoutMs });
      const key = "seam-handover-1";
      const sentAt = Date.now();
      const first = stack
        .invoke(runEvent({ tenantId, body, key }))
        .then((response) => ({ response, at: Date.now() }));
      // Wait until the hand-over has started the execution, then until the request's deadline passed.
      for (let i = 0; stack.executions.names().length === executionsBefore; i += 1) {
        if (i > 400) throw new Error("the run was not handed over");
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const runId = stack.executions.names().at(-1) ?? "";
      const record = await stack.deps.runs.get(tenantId, runId);
      const deadlineAt = Date.parse(record?.run.startedAt ?? "") + timeoutMs;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadlineAt - Date.now()) + 200));
      const retry = await stack.invoke(runEvent({ tenantId, body, key }));
      const { response: answered, at: answeredAt } = await first;
      expect(answered.statusCode, answered.body).toBe(202);
      expect(RunRecordSchema.parse(json(answered)).runId).toBe(runId);
      // The hand-over waited for the runner no longer than the request's own deadline allowed.
      expect(answeredAt - sentAt).toBeLessThan(timeoutMs + 1_500);
      expect([202, 409]).toContain(retry.statusCode);
      if (retry.statusCode === 202) expect(RunRecordSchema.parse(json(retry)).runId).toBe(runId);
      expect(stack.executions.names().length - executionsBefore).toBe(1);
    } finally {
      release();
      remove();
    }
  });
});
