import { context, SpanStatusCode, trace } from "@opentelemetry/api";
import type { InMemorySpanExporter, ReadableSpan } from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { RunRecordSchema } from "../functions/api/contract.js";
import { agentTraceOf } from "../shared/run-trace.js";
import type { TracingSdk } from "../shared/telemetry/sdk.js";
import { decide, GBP_RULES, json, pollUntil, SEED_PROMPT } from "./support/approvals.js";
import { type DurableStack, runPathEvent, startDurableStack } from "./support/durable.js";
import { runEvent } from "./support/idempotency.js";
import { runTrace, startMemoryTracing } from "./support/spans.js";

let stack: DurableStack;
let sdk: TracingSdk;
let exporter: InMemorySpanExporter;
beforeAll(async () => {
  ({ sdk, exporter } = startMemoryTracing());
  stack = await startDurableStack({ MAX_CYCLES: "5", APPROVAL_RULES: GBP_RULES });
});
afterAll(async () => {
  await stack?.stop();
  await sdk?.shutdown();
});
beforeEach(() => {
  stack.model.usePlanner();
  stack.faults.beforeStep = undefined;
  stack.faults.afterStep = undefined;
});

/** Starts the seed scenario as a durable run (`Prefer: respond-async`) for `tenantId`. */
async function startAsync(tenantId: string, prompt = SEED_PROMPT) {
  const event = runEvent({ tenantId, prompt });
  event.headers = { ...event.headers, prefer: "respond-async" };
  const response = await stack.invoke(event);
  expect(response.statusCode).toBe(202);
  return RunRecordSchema.parse(json(response));
}

/** The finished execution's spans: the run's trace, after its last invocation. */
async function finishedTrace(runId: string) {
  await stack.executions.get(runId)?.done;
  return runTrace(exporter, runId);
}

/** A span time (`[seconds, nanoseconds]`) in epoch milliseconds. */
const hrMs = (time: [number, number]) => time[0] * 1000 + Math.round(time[1] / 1e6);

const named = (spans: ReadableSpan[], prefix: string) => spans.filter((span) => span.name.startsWith(prefix));

describe("a durable run's trace", () => {
  it("an async run is one trace: the agent span (ids from the run id) over every model call, tool call and store call", async () => {
    const tenantId = "tenant_trace_async";
    const started = await startAsync(tenantId, "Calculate tax on 100.00 GBP for GB.");
    const run = await pollUntil(stack, started.runId, tenantId);
    expect(run.status).toBe("completed");
    const { agent, spans, childrenOf } = await finishedTrace(run.runId);
    expect(agent.spanContext()).toMatchObject(agentTraceOf(run.runId, false) ?? {});
    expect(agent.parentSpanContext).toBeUndefined();
    expect(agent.attributes).toMatchObject({
      "boundloop.run.durable": true,
      "boundloop.run.status": "completed",
      "boundloop.run.cycles": run.cycles,
      "gen_ai.conversation.id": run.runId,
      "boundloop.tenant.id": tenantId,
    });
    // Its span covers the run from the start the API recorded.
    const startedMs = agent.startTime[0] * 1000 + agent.startTime[1] / 1e6;
    expect(Math.abs(startedMs - Date.parse(run.startedAt))).toBeLessThan(2);
    const direct = childrenOf(agent);
    expect(named(direct, "chat ")).toHaveLength(run.cycles ?? 0);
    expect(named(direct, "execute_tool ").length).toBeGreaterThan(0);
    expect(named(direct, "DynamoDB.").length).toBeGreaterThan(0);
    // Nothing of the run's trace hangs outside the agent span's subtree.
    const inTree = new Set<string>([agent.spanContext().spanId]);
    for (let grew = true; grew; ) {
      grew = false;
      for (const span of spans) {
        const parent = span.parentSpanContext?.spanId;
        if (parent && inTree.has(parent) && !inTree.has(span.spanContext().spanId)) {
          inTree.add(span.spanContext().spanId);
          grew = true;
        }
      }
    }
    expect(inTree.size).toBe(spans.length);
  });

  it("the API's writes that start it (the quota admission, the run record) are in the run's trace, under its agent span", async () => {
    const tenantId = "tenant_trace_async_start";
    const before = new Set(exporter.getFinishedSpans());
    const started = await startAsync(tenantId, "Calculate tax on 100.00 GBP for GB.");
    const ids = agentTraceOf(started.runId, false);
    // The spans of the request itself: those ended while POST /v1/runs was answered.
    const request = exporter.getFinishedSpans().filter((span) => !before.has(span));
    const writes = request.filter((span) => ["DynamoDB.PutItem", "DynamoDB.UpdateItem"].includes(span.name));
    expect(writes.length).toBeGreaterThanOrEqual(2);
    for (const write of writes) expect(write.spanContext().traceId).toBe(ids?.traceId);
    // The API's own are children of the agent span (the execution's tool writes, if it ran already, are
    // children of their tools' spans).
    const direct = writes.filter((write) => write.parentSpanContext?.spanId === ids?.spanId);
    expect(direct.map((write) => write.name)).toEqual(
      expect.arrayContaining(["DynamoDB.UpdateItem", "DynamoDB.PutItem"]),
    );
    await pollUntil(stack, started.runId, tenantId);
    const { agent, spans } = await finishedTrace(started.runId);
    const inTrace = new Set(spans.map((span) => span.spanContext().spanId));
    for (const write of writes) expect(inTrace.has(write.spanContext().spanId)).toBe(true);
    expect(agent.attributes["boundloop.run.status"]).toBe("completed");
  });

  it("a replayed step makes no second chat span: spans come from executed work only", async () => {
    const tenantId = "tenant_trace_replay";
    const requestsBefore = stack.model.requests.length;
    let interrupted = 0;
    stack.faults.beforeStep = (name) => {
      // The invocation dies after cycle 1 was checkpointed: the next one replays cycle 1.
      if (name === "cycle-2:model" && interrupted++ === 0) throw new Error("invocation lost between steps");
    };
    // Under the approval threshold (GBP 1000.00), so the run does not pause.
    const started = await startAsync(tenantId, SEED_PROMPT.replace("1500 GBP", "500 GBP"));
    const run = await pollUntil(stack, started.runId, tenantId);
    expect(run).toMatchObject({ status: "completed", cycles: 3 });
    const { agent, childrenOf } = await finishedTrace(run.runId);
    expect(stack.executions.get(run.runId)?.result?.getInvocations().length).toBeGreaterThanOrEqual(2);
    expect(stack.model.requests.length - requestsBefore).toBe(3);
    const chats = named(childrenOf(agent), "chat ");
    expect(chats).toHaveLength(3);
    const tools = named(childrenOf(agent), "execute_tool ");
    expect(tools.map((span) => span.name).sort()).toEqual([
      "execute_tool calculateTax",
      "execute_tool calculateTax",
      "execute_tool recordInvoice",
    ]);
  });

  it("a run paused for approval and resumed: one agent span, the wait as its own span with its duration", async () => {
    const tenantId = "tenant_trace_approval";
    const started = await startAsync(tenantId);
    const paused = await pollUntil(stack, started.runId, tenantId, ["running"]);
    expect(paused.status).toBe("awaiting_approval");
    const approval = paused.pendingApprovals?.[0];
    if (!approval) throw new Error("no pending approval");
    // Nothing of the agent span yet: it ends with the run.
    expect(
      exporter.getFinishedSpans().filter((span) => span.attributes["boundloop.run.id"] === paused.runId),
    ).toHaveLength(0);
    await new Promise((resolve) => setTimeout(resolve, 30));
    const decided = await decide(
      stack,
      { runId: paused.runId, approvalId: approval.approvalId, tenantId },
      "approve",
    );
    expect(decided.statusCode).toBe(200);
    const run = await pollUntil(stack, paused.runId, tenantId);
    expect(run.status).toBe("completed");
    const { agent, childrenOf } = await finishedTrace(run.runId);
    const direct = childrenOf(agent);
    const waits = direct.filter((span) => span.name === "boundloop.approval.wait");
    expect(waits).toHaveLength(1);
    const wait = waits[0] as ReadableSpan;
    expect(wait.attributes).toMatchObject({
      "boundloop.approval.id": approval.approvalId,
      "boundloop.approval.decision": "approved",
      "gen_ai.tool.name": "recordInvoice",
      // APPROVAL_RULES is a policy: the wait names it as the decision that held the call.
      "boundloop.policy.decision": "approval",
      "boundloop.policy.ids": ["approval-rules.recordInvoice.GBP"],
    });
    const durationMs = wait.duration[0] * 1000 + wait.duration[1] / 1e6;
    const decidedApproval = JSON.parse(decided.body ?? "{}") as { decidedAt: string; requestedAt: string };
    expect(durationMs).toBe(Date.parse(decidedApproval.decidedAt) - Date.parse(decidedApproval.requestedAt));
    expect(durationMs).toBeGreaterThanOrEqual(30);
    // The pause replayed the run's earlier steps in a new invocation: still one chat span per model call.
    expect(named(direct, "chat ")).toHaveLength(run.cycles ?? 0);
    expect(named(direct, "execute_tool recordInvoice")).toHaveLength(1);
  });
  it("a run cancelled while it waits for approval still has its agent span: CANCELLED, over the spans it made", async () => {
    const tenantId = "tenant_trace_cancel";
    const started = await startAsync(tenantId);
    const paused = await pollUntil(stack, started.runId, tenantId, ["running"]);
    expect(paused.status).toBe("awaiting_approval");
    const cancelled = await stack.invoke(runPathEvent(paused.runId, tenantId, "cancel"));
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    await stack.executions.get(paused.runId)?.done.catch(() => undefined);
    // The stopped execution never reaches run:finish: the cancel emits the span, under the ids its
    // children already name as their parent.
    const { agent, childrenOf } = runTrace(exporter, paused.runId);
    const ids = agentTraceOf(paused.runId, false);
    expect(agent.spanContext()).toMatchObject({ traceId: ids?.traceId, spanId: ids?.spanId });
    expect(agent.attributes).toMatchObject({
      "boundloop.run.status": "cancelled",
      "boundloop.run.durable": true,
      "boundloop.run.cycles": paused.cyclesRecorded,
      "error.type": "CANCELLED",
    });
    expect(agent.status.code).toBe(SpanStatusCode.ERROR);
    expect(hrMs(agent.startTime)).toBe(Date.parse(paused.startedAt));
    // Cycle 1 (recorded) and cycle 2, whose recordInvoice call waited for the approval.
    expect(named(childrenOf(agent), "chat ")).toHaveLength(2);
    // A second cancel (409 RUN_NOT_RUNNING) emits no second span.
    expect((await stack.invoke(runPathEvent(paused.runId, tenantId, "cancel"))).statusCode).toBe(409);
    expect(() => runTrace(exporter, paused.runId)).not.toThrow();
  });

  it("a call a person rejects has no execute_tool span: the wait span names the policy that held it", async () => {
    const tenantId = "tenant_trace_rejected";
    const started = await startAsync(tenantId);
    const paused = await pollUntil(stack, started.runId, tenantId, ["running"]);
    const approval = paused.pendingApprovals?.[0];
    if (!approval) throw new Error("no pending approval");
    const decided = await decide(
      stack,
      { runId: paused.runId, approvalId: approval.approvalId, tenantId },
      "reject",
    );
    expect(decided.statusCode).toBe(200);
    await pollUntil(stack, paused.runId, tenantId);
    const { agent, childrenOf } = await finishedTrace(paused.runId);
    const direct = childrenOf(agent);
    expect(named(direct, "execute_tool recordInvoice")).toHaveLength(0);
    const waits = direct.filter((span) => span.name === "boundloop.approval.wait");
    expect(waits.map((span) => span.attributes)).toEqual([
      expect.objectContaining({
        "boundloop.approval.id": approval.approvalId,
        "boundloop.approval.decision": "rejected",
        "boundloop.policy.decision": "approval",
        "boundloop.policy.ids": ["approval-rules.recordInvoice.GBP"],
      }),
    ]);
  });

  it("a synchronous run handed over at an approval is one trace: the request's spans and the execution's under one agent span", async () => {
    const tenantId = "tenant_trace_handover";
    const requestsBefore = stack.model.requests.length;
    // No Prefer header: the run starts synchronously, pauses at recordInvoice and is handed over (202).
    // The request runs under an invocation span (as an ADOT layer's): the run's trace is the request's.
    const invocation = trace.getTracer("test").startSpan("lambda invocation");
    const response = await context.with(trace.setSpan(context.active(), invocation), () =>
      stack.invoke(runEvent({ tenantId, prompt: SEED_PROMPT })),
    );
    invocation.end();
    expect(response.statusCode, response.body).toBe(202);
    const paused = RunRecordSchema.parse(json(response));
    expect(paused.status).toBe("awaiting_approval");
    const runId = paused.runId;
    const approval = paused.pendingApprovals?.[0];
    if (!approval) throw new Error("no pending approval");
    const syncCalls = stack.model.requests.length - requestsBefore;
    expect(syncCalls).toBeGreaterThan(0);
    const derived = agentTraceOf(runId, false);
    if (!derived) throw new Error("tracing is off");
    const ids = { traceId: invocation.spanContext().traceId, spanId: derived.spanId };
    // The execution got the request's agent span (its ids from the run id), and the span is not exported
    // yet: it was left open at the pause.
    expect(stack.executions.get(runId)?.payload.trace).toMatchObject({
      traceId: ids.traceId,
      spanId: ids.spanId,
    });
    const ofRun = () =>
      exporter.getFinishedSpans().filter((span) => span.spanContext().traceId === ids.traceId);
    expect(ofRun().filter((span) => span.name === "invoke_agent boundloop")).toHaveLength(0);
    // The request's model calls are already exported, children of that open span.
    const syncChats = named(ofRun(), "chat ");
    expect(syncChats).toHaveLength(syncCalls);
    for (const chat of syncChats) expect(chat.parentSpanContext?.spanId).toBe(ids.spanId);

    const decided = await decide(stack, { runId, approvalId: approval.approvalId, tenantId }, "approve");
    expect(decided.statusCode).toBe(200);
    const run = await pollUntil(stack, runId, tenantId);
    expect(run.status).toBe("completed");
    const { agent, spans, childrenOf } = await finishedTrace(runId);
    // One agent span, emitted once by the execution with the request's ids, covering the run from its start.
    expect(agent.spanContext()).toMatchObject({ traceId: ids.traceId, spanId: ids.spanId });
    expect(agent.parentSpanContext?.spanId).toBe(invocation.spanContext().spanId);
    expect(agent.attributes).toMatchObject({
      "boundloop.run.id": runId,
      "boundloop.run.status": "completed",
      "boundloop.run.cycles": run.cycles,
      "boundloop.tenant.id": tenantId,
    });
    const startedMs = agent.startTime[0] * 1000 + agent.startTime[1] / 1e6;
    expect(Math.abs(startedMs - Date.parse(run.startedAt))).toBeLessThan(2);
    const direct = childrenOf(agent);
    // Every model call once: the request's, then the execution's; the carried steps made no second span.
    expect(stack.model.requests.length - requestsBefore).toBe(run.cycles);
    const chats = named(direct, "chat ");
    expect(chats).toHaveLength(run.cycles ?? 0);
    expect(chats.filter((chat) => syncChats.includes(chat))).toHaveLength(syncCalls);
    expect(named(direct, "execute_tool recordInvoice")).toHaveLength(1);
    const waits = direct.filter((span) => span.name === "boundloop.approval.wait");
    expect(waits).toHaveLength(1);
    expect(waits[0]?.attributes).toMatchObject({
      "boundloop.approval.id": approval.approvalId,
      "boundloop.approval.decision": "approved",
    });
    // The trace is the invocation's: the agent span's subtree and, beside it, the hand-over's own store
    // calls (made after the synchronous part, under the invocation span).
    const inTree = new Set<string>([agent.spanContext().spanId]);
    for (let grew = true; grew; ) {
      grew = false;
      for (const span of spans) {
        const parent = span.parentSpanContext?.spanId;
        if (parent && inTree.has(parent) && !inTree.has(span.spanContext().spanId)) {
          inTree.add(span.spanContext().spanId);
          grew = true;
        }
      }
    }
    const outside = spans.filter((span) => !inTree.has(span.spanContext().spanId));
    const invocationId = invocation.spanContext().spanId;
    for (const span of outside) {
      if (span.spanContext().spanId === invocationId) continue;
      expect(span.name).toMatch(/^DynamoDB\./);
      expect(span.parentSpanContext?.spanId).toBe(invocationId);
    }
  });
});
