/**
 * Conversations end to end: the real Lambda handler (functions/api/app-handler.ts over real
 * deps), DynamoDB Local, and the local model server over HTTP through the real openai client.
 * This file: a run continuing earlier ones, who may continue which run, and a provider's context-length
 * refusal. One quote's one invoice across runs: conversation-invoices.test.ts; bounded history:
 * conversation-history.test.ts.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { RunRecordSchema } from "../functions/api/contract.js";
import type { RecordedRequest } from "../local/model-server.js";
import { estimateTokens } from "../shared/agent/transcript.js";
import { apiEvent, header } from "./fixtures/events.js";
import {
  type Caller,
  expectContinues,
  invoiceOf,
  json,
  newCaller,
  post,
  problem,
  quoteIdOf,
  run,
  summary,
} from "./support/conversation.js";
import { tenantKeys } from "./support/reliability.js";
import { type TestStack, testStackForFile } from "./support/stack.js";

const stack = testStackForFile({}, { planner: true });

/** `GET /v1/runs/{runId}` as `caller`. */
const getRun = (caller: Caller, runId: string) =>
  stack.invoke(
    apiEvent("http-api-v2", {
      method: "GET",
      path: `/v1/runs/${runId}`,
      extraClaims: { tenant_id: caller.tenantId, sub: caller.userId },
    }) as never,
  );

/** The model requests made from index `from` on (the first one is the run's first model call). */
const requestsSince = (target: TestStack, from: number): RecordedRequest[] =>
  target.model.requests.slice(from);

describe("a two-run conversation through the handler", () => {
  it("sends the first run's prompt, tool call, tool result and answer before the new prompt; 'now record it' records its quote once, and a retry replays", async () => {
    const caller = newCaller();
    const firstPrompt = "Calculate tax on 1500 GBP for a client in the UK.";
    const first = run(await post(stack, caller, { prompt: firstPrompt }));
    expect(first.status).toBe("completed");
    expect(summary(first.toolResults)).toEqual(["calculateTax:success"]);
    expect(first.previousRunId).toBeNull();
    expect(first.history).toBeNull();
    const quoteId = quoteIdOf(first.toolResults[0]);

    const from = stack.model.requests.length;
    const key = { "idempotency-key": `"conv-${randomUUID()}"` };
    const secondBody = { prompt: "Now record it.", previousRunId: first.runId };
    const secondResponse = await post(stack, caller, secondBody, key);
    const second = run(secondResponse);
    expect(second.status).toBe("completed");
    expect(summary(second.toolResults)).toEqual(["recordInvoice:success"]);
    expect(invoiceOf(second.toolResults[0]).quoteId).toBe(quoteId);
    expect(second.previousRunId).toBe(first.runId);

    // The second run's first model request: today's system prompt, then the first run in order, then
    // the new prompt; valid for chat completions (each tool message follows its assistant tool_calls).
    const history = expectContinues(
      requestsSince(stack, from)[0] as RecordedRequest,
      { prompt: firstPrompt, answer: first.answer, quoteId },
      "Now record it.",
    );
    expect(second.history).toEqual({
      messages: 4,
      estimatedTokens: estimateTokens(history),
      droppedMessages: 0,
    });

    // GET shows the link, so a client can walk the conversation back.
    const read = await getRun(caller, second.runId);
    expect(read.statusCode).toBe(200);
    const record = RunRecordSchema.parse(json(read));
    expect(record).toMatchObject({ previousRunId: first.runId, history: second.history });
    expect(JSON.stringify(json(read))).not.toContain("transcript");

    // A retry of the second request with its Idempotency-Key replays: same body, no model call, one invoice.
    const before = stack.model.requests.length;
    const retry = await post(stack, caller, secondBody, key);
    expect(retry.statusCode).toBe(200);
    expect(header(retry, "idempotent-replayed")).toBe("true");
    expect(json(retry)).toEqual(json(secondResponse));
    expect(stack.model.requests.length).toBe(before);
    const ledger = await stack.deps.ledger.list(caller.tenantId);
    expect(ledger.map((invoice) => invoice.quoteId)).toEqual([quoteId]);
  });

  it("a third run chains on the second: its history holds both earlier runs in order", async () => {
    const caller = newCaller();
    const first = run(
      await post(stack, caller, { prompt: "Calculate tax on 200 BDT for a client in Bangladesh." }),
    );
    const second = run(await post(stack, caller, { prompt: "Record it.", previousRunId: first.runId }));
    const from = stack.model.requests.length;
    const third = run(
      await post(stack, caller, {
        prompt: "Calculate tax on 300 GBP for a client in the UK.",
        previousRunId: second.runId,
      }),
    );
    expect(third.history?.messages).toBe(8);
    const users = (requestsSince(stack, from)[0]?.messages ?? [])
      .filter((m) => m.role === "user")
      .map((m) => m.content);
    expect(users).toEqual([
      "Calculate tax on 200 BDT for a client in Bangladesh.",
      "Record it.",
      "Calculate tax on 300 GBP for a client in the UK.",
    ]);
    expect(summary(third.toolResults)).toEqual(["calculateTax:success"]);
  });
});

describe("who may continue which run", () => {
  let owner: Caller;
  let previous: string;
  beforeAll(async () => {
    owner = newCaller();
    previous = run(
      await post(stack, owner, { prompt: "Calculate tax on 10 GBP for a client in the UK." }),
    ).runId;
  });

  /** Asserts a rejected continuation wrote nothing and called no model. */
  async function rejected(caller: Caller, body: Record<string, unknown>, status: number, code: string) {
    const before = stack.model.requests.length;
    const keysBefore = await tenantKeys(stack.deps.ddb, stack.config.table.name, caller.tenantId);
    const response = await post(stack, caller, body, { "idempotency-key": `"k-${randomUUID()}"` });
    expect(response.statusCode, response.body).toBe(status);
    const body_ = problem(response);
    expect(body_.code).toBe(code);
    expect(stack.model.requests.length).toBe(before);
    expect(await tenantKeys(stack.deps.ddb, stack.config.table.name, caller.tenantId)).toEqual(keysBefore);
    return { body: body_, response };
  }

  it("another tenant, another user of the same tenant and an unknown id all get the same 404", async () => {
    const prompt = "Now record it.";
    const otherTenant = await rejected(
      { ...owner, tenantId: `${owner.tenantId}_x` },
      { prompt, previousRunId: previous },
      404,
      "NOT_FOUND",
    );
    const otherUser = await rejected(
      { ...owner, userId: `${owner.userId}_x` },
      { prompt, previousRunId: previous },
      404,
      "NOT_FOUND",
    );
    const unknownId = `run_${randomUUID()}`;
    const unknown = await rejected(owner, { prompt, previousRunId: unknownId }, 404, "NOT_FOUND");
    expect(otherTenant.body.detail).toBe(`There is no run ${previous} to continue.`);
    expect(otherUser.body).toEqual(otherTenant.body);
    expect(unknown.body.detail).toBe(`There is no run ${unknownId} to continue.`);
    expect(Object.keys(unknown.body).sort()).toEqual(Object.keys(otherUser.body).sort());
  });

  it("a run still running is 409 PREVIOUS_RUN_IN_PROGRESS with Retry-After", async () => {
    const runId = `run_${randomUUID()}`;
    await stack.deps.runs.start({
      tenantId: owner.tenantId,
      runId,
      userId: owner.userId,
      prompt: "still going",
      limits: { maxCycles: 5, timeoutMs: 20_000 },
    });
    const { body, response } = await rejected(
      owner,
      { prompt: "go on", previousRunId: runId },
      409,
      "PREVIOUS_RUN_IN_PROGRESS",
    );
    expect(body.previousRunStatus).toBe("running");
    const retryAfter = Number(header(response, "retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(20);
  });

  it("a run that failed on the server, or was killed (running past its deadline), is 409 PREVIOUS_RUN_NOT_CONTINUABLE", async () => {
    const failed = `run_${randomUUID()}`;
    const base = {
      tenantId: owner.tenantId,
      userId: owner.userId,
      prompt: "p",
      limits: { maxCycles: 5, timeoutMs: 1_000 },
    };
    await stack.deps.runs.start({ ...base, runId: failed });
    await stack.deps.runs.fail(owner.tenantId, failed, "The server failed during the run.");
    // A synchronous run keeps its deadline at its start: 1 s after it, and 2 minutes ago.
    const killed = `run_${randomUUID()}`;
    const killedStart = new Date(Date.now() - 120_000);
    const syncDeadlineAt = new Date(killedStart.getTime() + 1_000).toISOString();
    await stack.deps.runs.start({ ...base, runId: killed, syncDeadlineAt }, killedStart);
    for (const [previousRunId, detail] of [
      [failed, "failed on the server"],
      [killed, "past its deadline"],
    ] as const) {
      const { body } = await rejected(
        owner,
        { prompt: "go on", previousRunId },
        409,
        "PREVIOUS_RUN_NOT_CONTINUABLE",
      );
      expect(body.detail).toContain(detail);
    }
  });

  it("a durable run running past its deadline is still in progress (409 PREVIOUS_RUN_IN_PROGRESS), never taken as killed", async () => {
    // No synchronous deadline: a durable run, whose execution may outlive any one deadline (its waits).
    const durable = `run_${randomUUID()}`;
    await stack.deps.runs.start(
      {
        tenantId: owner.tenantId,
        userId: owner.userId,
        runId: durable,
        prompt: "p",
        limits: { maxCycles: 5, timeoutMs: 1_000 },
      },
      new Date(Date.now() - 120_000),
    );
    const { body } = await rejected(
      owner,
      { prompt: "go on", previousRunId: durable },
      409,
      "PREVIOUS_RUN_IN_PROGRESS",
    );
    expect(body.previousRunStatus).toBe("running");
  });

  it("time a run spent waiting for approval does not count against its deadline: back to running after a 10 min wait, it is 409 PREVIOUS_RUN_IN_PROGRESS, not stale", async () => {
    const runId = `run_${randomUUID()}`;
    const now = Date.now();
    const startedAt = now - 600_000;
    await stack.deps.runs.start(
      {
        tenantId: owner.tenantId,
        runId,
        userId: owner.userId,
        prompt: "p",
        limits: { maxCycles: 5, timeoutMs: 60_000 },
      },
      new Date(startedAt),
    );
    // Paused 30 s into its 60 s, decided 5 s ago: 30 s of its deadline were left then, 25 s now.
    await stack.deps.runs.setWaiting(owner.tenantId, runId, true, new Date(startedAt + 30_000));
    await stack.deps.runs.setWaiting(owner.tenantId, runId, false, new Date(now - 5_000));
    const response = await rejected(
      owner,
      { prompt: "go on", previousRunId: runId },
      409,
      "PREVIOUS_RUN_IN_PROGRESS",
    );
    expect(response.body.previousRunStatus).toBe("running");
    const retryAfter = Number(header(response.response, "retry-after"));
    expect(retryAfter).toBeGreaterThan(15);
    expect(retryAfter).toBeLessThanOrEqual(25);
    // The wait sums stay internal: the record as GET /v1/runs shows it has none of them.
    const found = await stack.deps.runs.get(owner.tenantId, runId);
    expect(Object.keys(found?.run ?? {}).filter((name) => name.startsWith("approvalWait"))).toEqual([]);
    expect(found?.run.status).toBe("running");
  });

  it("a run whose records expired (past ttl, not yet deleted) is 404 saying so; another user's expired run is the plain 404", async () => {
    const runId = `run_${randomUUID()}`;
    const longAgo = new Date(Date.now() - (stack.config.runs.ttlSeconds + 60) * 1000);
    await stack.deps.runs.start(
      {
        tenantId: owner.tenantId,
        runId,
        userId: owner.userId,
        prompt: "old",
        limits: { maxCycles: 5, timeoutMs: 1_000 },
      },
      longAgo,
    );
    await stack.deps.runs.finish(
      owner.tenantId,
      runId,
      {
        status: "completed",
        cycles: 1,
        answer: "old answer",
        reason: null,
        usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
        durationMs: 5,
        transcript: [
          { role: "user", content: "old" },
          { role: "assistant", content: "old answer" },
        ],
      },
      longAgo,
    );
    const { body } = await rejected(owner, { prompt: "go on", previousRunId: runId }, 404, "NOT_FOUND");
    expect(body.detail).toMatch(
      new RegExp(`^Run ${runId} has expired .*RUN_TTL_SECONDS = ${stack.config.runs.ttlSeconds}`),
    );
    expect(body.expired).toBe(true);
    const stranger = await rejected(
      { ...owner, userId: `${owner.userId}_x` },
      { prompt: "go on", previousRunId: runId },
      404,
      "NOT_FOUND",
    );
    expect(stranger.body.detail).toBe(`There is no run ${runId} to continue.`);
    expect(stranger.body.expired).toBeUndefined();
  });

  it("a malformed previousRunId is 400 INVALID_REQUEST naming the field", async () => {
    const { body } = await rejected(
      owner,
      { prompt: "go on", previousRunId: "run#1" },
      400,
      "INVALID_REQUEST",
    );
    expect(body.errors?.[0]).toMatchObject({ in: "body", path: "previousRunId" });
  });

  it("previousRunId null (what a new run's record shows, sent back) starts a new conversation, as absent does", async () => {
    const caller = newCaller();
    const prompt = "Calculate tax on 1500 GBP for a client in the UK.";
    const from = stack.model.requests.length;
    const key = { "idempotency-key": `"null-${randomUUID()}"` };
    const response = await post(stack, caller, { prompt, previousRunId: null }, key);
    expect(response.statusCode, response.body).toBe(200);
    const started = run(response);
    expect(started).toMatchObject({ status: "completed", previousRunId: null, history: null });
    const messages = (requestsSince(stack, from)[0] as RecordedRequest).messages;
    expect(messages.map((message) => message.role)).toEqual(["system", "user"]);
    const read = await getRun(caller, started.runId);
    expect(RunRecordSchema.parse(json(read))).toMatchObject({
      previousRunId: null,
      history: null,
      conversationId: started.runId,
    });
    // The same request without the field is the same request: its Idempotency-Key replays, no new run.
    const retry = await post(stack, caller, { prompt }, key);
    expect(retry.statusCode, retry.body).toBe(200);
    expect(header(retry, "idempotent-replayed")).toBe("true");
    expect(json(retry)).toEqual(json(response));
  });
});

describe("a provider's context-length refusal", () => {
  const flavors = ["openai", "vllm", "llamacpp", "ollama", "litellm"] as const;
  for (const flavor of flavors) {
    it(`${flavor}: the run ends context_length_exceeded (422 CONTEXT_LENGTH_EXCEEDED) naming the history size`, async () => {
      const caller = newCaller();
      const first = run(
        await post(stack, caller, { prompt: "Calculate tax on 1500 GBP for a client in the UK." }),
      );
      stack.model.script([{ contextLengthExceeded: flavor }]);
      const response = await post(stack, caller, { prompt: "Now record it.", previousRunId: first.runId });
      expect(response.statusCode).toBe(422);
      const body = problem(response);
      expect(body.code).toBe("CONTEXT_LENGTH_EXCEEDED");
      expect(body).toMatchObject({
        runStatus: "context_length_exceeded",
        cycles: 1,
        toolResults: [],
        previousRunId: first.runId,
      });
      const contextLength = body.contextLength as Record<string, unknown>;
      expect(contextLength).toMatchObject({ providerStatus: 400, historyMessages: 4, requestMessages: 6 });
      expect(contextLength.historyEstimatedTokens).toBe(
        (body.history as { estimatedTokens: number }).estimatedTokens,
      );
      expect(Number(contextLength.contextTokens)).toBeGreaterThan(0);
      expect(Number(contextLength.requestTokens)).toBeGreaterThan(Number(contextLength.contextTokens));
      const stored = await stack.deps.runs.get(caller.tenantId, String(body.runId));
      expect(stored?.run.status).toBe("context_length_exceeded");
    });
  }

  it("any other 400 from the provider stays model_error (502 MODEL_UNAVAILABLE)", async () => {
    stack.model.script([{ status: 400 }]);
    const response = await post(stack, newCaller(), {
      prompt: "Calculate tax on 1 GBP for a client in the UK.",
    });
    expect(response.statusCode).toBe(502);
    expect(problem(response)).toMatchObject({
      code: "MODEL_UNAVAILABLE",
      runStatus: "model_error",
      providerStatus: 400,
    });
  });
});
