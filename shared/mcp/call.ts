import { randomUUID } from "node:crypto";
import type { Logger } from "@aws-lambda-powertools/logger";
import type { Metrics } from "@aws-lambda-powertools/metrics";
import { Deadline } from "../agent/deadline.js";
import {
  notStartedResult,
  type PreparedToolCall,
  prepareToolCall,
  runPreparedCall,
  type ToolRegistry,
} from "../agent/dispatcher.js";
import { canonicalJson } from "../agent/idempotency-key.js";
import type { ToolResult } from "../agent/result.js";
import type { ApprovalPreview } from "../agent/tool.js";
import type { ApprovalEvents } from "../approval-events.js";
import type { Config } from "../config.js";
import { sha256Hex } from "../hash.js";
import type { SecurityContext } from "../identity.js";
import { recordToolResultMetric } from "../observability.js";
import type { AgentRunShapes } from "../runs/run-shapes.js";
import type { ApprovalRecord, ApprovalStore } from "../store/approvals.js";
import type { IdempotencyClaim, IdempotencyStore } from "../store/idempotency.js";
import type { RunStore } from "../store/runs.js";

/**
 * The `_meta` key of a `tools/call` request that carries the caller's idempotency key (1-255 printable
 * ASCII characters), in the reverse-DNS `_meta` naming MCP asks for. SEP-3182 proposed an idempotency
 * key in `_meta` for every server; it was closed, so the name is this server's own.
 */
export const IDEMPOTENCY_META_KEY = "io.boundloop/idempotency-key";

/** The `_meta` key of a result replayed from an earlier call with the same idempotency key (`true`). */
export const REPLAYED_META_KEY = "io.boundloop/replayed";

/** The route the MCP idempotency records are scoped by (one namespace beside the HTTP API's routes). */
export const MCP_CALL_ROUTE = "MCP tools/call";

/** Longest idempotency key accepted (the HTTP API's Idempotency-Key bound). */
const MAX_KEY_LENGTH = 255;

/** HTTP-like status of a stored record: a final tool result, or an approval still to be decided. */
const STORED_RESULT = 200;
const STORED_PENDING = 202;

/** A `tools/call` result as MCP defines it (CallToolResult). */
export interface McpToolResult {
  [key: string]: unknown;
  content: Array<{ type: "text"; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError: boolean;
  _meta?: Record<string, unknown>;
}

/** What one `tools/call` needs: stores, registry, config, observability, and the verified caller. */
export interface McpCallDeps {
  config: Config;
  tools: ToolRegistry;
  idempotency: IdempotencyStore;
  approvals: ApprovalStore;
  approvalEvents: ApprovalEvents;
  runs: RunStore<AgentRunShapes>;
  logger: Logger;
  metrics: Metrics;
}

/** The pointer a record holds while its call waits for a person: the approval's run and id. */
interface PendingPointer {
  runId: string;
  approvalId: string;
}

/**
 * Answers one MCP `tools/call` through the loop's dispatcher (docs/mcp.md):
 * `prepareToolCall` (unknown tool → permission → parse → zod) → exactly-once guard → approval policy →
 * `runPreparedCall`. Failures are tool errors (`isError: true`) in the dispatcher's four categories with
 * its codes and field paths. Exactly once:
 * - with `_meta["io.boundloop/idempotency-key"]`: one conditional put claims (tenant, key) with the
 *   fingerprint of (user, tool, validated arguments); a repeat replays the stored result
 *   (`_meta["io.boundloop/replayed"]`), other arguments are IDEMPOTENCY_KEY_REUSED, a call still running
 *   IDEMPOTENCY_KEY_IN_USE; the tool's own idempotency key is derived from the caller's key, so the effect
 *   and that key are the tool's one conditional write, as in the loop;
 * - without one: a mutating tool runs only when it declares a business key (recordInvoice: one invoice
 *   per quote), else validation_error IDEMPOTENCY_KEY_REQUIRED and nothing runs.
 * A call the approval policy catches does not run: the approval is stored (no durable callback: decided
 * through the approvals API) and the result is business_error APPROVAL_PENDING naming it; a later call
 * with the same key returns the decision: approved → the call runs then (its tool key makes the effect
 * once however many repeats race), rejected / expired / cancelled → that error.
 * Every result is logged and counted as a tool result with `surface: "mcp"`. Never throws.
 */
export async function callMcpTool(
  deps: McpCallDeps,
  security: SecurityContext,
  params: {
    name: string;
    arguments?: Record<string, unknown> | undefined;
    _meta?: Record<string, unknown> | undefined;
  },
  options: { remainingMs?: number | undefined } = {},
): Promise<McpToolResult> {
  const callId = `mcp_${randomUUID().replaceAll("-", "")}`;
  const call = { id: callId, name: params.name, arguments: JSON.stringify(params.arguments ?? {}) };
  const budget = Math.max(
    0,
    Math.min(
      deps.config.limits.runTimeoutMs,
      (options.remainingMs ?? Infinity) - deps.config.limits.deadlineReserveMs,
    ),
  );
  const deadline = new Deadline(budget);
  try {
    const rawKey = params._meta?.[IDEMPOTENCY_META_KEY];
    const keyError = rawKey === undefined ? undefined : invalidKey(rawKey);
    const prepared = prepareToolCall(call, deps.tools, security);
    let outcome: { result: ToolResult; replayed?: boolean };
    if (prepared.kind === "failed") outcome = { result: prepared.result };
    else if (keyError) outcome = { result: notStartedResult(call, "validation_error", keyError) };
    else {
      const context = { deps, security, prepared, deadline };
      outcome = rawKey === undefined ? await withoutKey(context) : await withKey(context, rawKey as string);
    }
    // A replayed result is this call's answer: it carries this call's id (its audit record's run id).
    const result = { ...outcome.result, metadata: { ...outcome.result.metadata, toolCallId: callId } };
    await observe(deps, security, call, result, outcome.replayed === true, budget);
    return toMcpResult(result, prepared.kind === "ready" ? prepared : undefined, outcome.replayed);
  } catch (error) {
    // The store could not be read or written around the call (the dispatcher itself never throws). The
    // client gets a fixed sentence; the error itself goes to the log only.
    const result = notStartedResult(call, "fatal_error", {
      code: "STORE_UNAVAILABLE",
      message: `${params.name} could not be guarded: the data store failed. The same call, with the same key, can be made again.`,
      retryable: true,
    });
    deps.logger.error("mcp tool call failed", { toolName: params.name, error: error as Error });
    await observe(deps, security, call, result, false, budget);
    return toMcpResult(result, undefined, false);
  } finally {
    deadline.dispose();
  }
}

/** Everything a guarded call path needs. */
interface CallContext {
  deps: McpCallDeps;
  security: SecurityContext;
  prepared: PreparedToolCall;
  deadline: Deadline;
}

/** The tool error of a malformed idempotency key, or undefined when it is usable. */
function invalidKey(value: unknown) {
  if (
    typeof value === "string" &&
    value.length >= 1 &&
    value.length <= MAX_KEY_LENGTH &&
    /^[\x20-\x7e]+$/.test(value)
  ) {
    return undefined;
  }
  return {
    code: "INVALID_IDEMPOTENCY_KEY",
    message: `_meta["${IDEMPOTENCY_META_KEY}"] must be a string of 1 to ${MAX_KEY_LENGTH} printable ASCII characters; the tool did not run.`,
    details: { path: `_meta.${IDEMPOTENCY_META_KEY}` },
    retryable: true,
  };
}

/** The validation error of a call that may only run with an idempotency key. */
function keyRequired(context: CallContext, why: string): ToolResult {
  return notStartedResult(context.prepared.call, "validation_error", {
    code: "IDEMPOTENCY_KEY_REQUIRED",
    message: `${context.prepared.tool.name} ${why}; send a key in _meta["${IDEMPOTENCY_META_KEY}"] (the same key again replays the result). The tool did not run.`,
    details: { path: `_meta.${IDEMPOTENCY_META_KEY}` },
    retryable: true,
  });
}

/**
 * A call without a key: a read runs; a mutating tool runs only guarded by its business key, and never
 * when it needs approval (nothing could collect the decision).
 */
async function withoutKey(context: CallContext): Promise<{ result: ToolResult }> {
  const { tool } = context.prepared;
  const runId = `mcp_${randomUUID().replaceAll("-", "")}`;
  if (!tool.isMutating) return { result: await execute(context, runId, runId) };
  if (!tool.businessKey)
    return { result: keyRequired(context, "changes data and has no business key of its own") };
  const preview = await checkApproval(context);
  if (preview.kind === "failed") return { result: preview.result };
  if (preview.preview) return { result: keyRequired(context, "needs a person's approval") };
  return { result: await execute(context, runId, runId) };
}

/** A call with a key: claim, replay, conflict, or run once; see {@link callMcpTool}. */
async function withKey(
  context: CallContext,
  key: string,
): Promise<{ result: ToolResult; replayed?: boolean }> {
  const { deps, security, prepared } = context;
  // The record is the caller's (tenant, user): another user's call under the same key is its own
  // operation, never a replay of someone else's result.
  const fingerprint = sha256Hex(
    `${MCP_CALL_ROUTE}\n${canonicalJson([security.userId, prepared.tool.name, prepared.args])}`,
  );
  const runId = `mcp_${sha256Hex(canonicalJson([security.tenantId, security.userId, key])).slice(0, 32)}`;
  const runScope = `mcp:${security.userId}:${key}`;
  const acquired = await deps.idempotency.acquire({
    tenantId: security.tenantId,
    userId: security.userId,
    route: MCP_CALL_ROUTE,
    idempotencyKey: key,
    fingerprint,
    leaseExpiresAt: context.deadline.at,
  });
  switch (acquired.kind) {
    case "mismatch":
      return {
        result: notStartedResult(prepared.call, "validation_error", {
          code: "IDEMPOTENCY_KEY_REUSED",
          message: `This idempotency key was already used for a different call (another tool, other arguments or another user); use a new key for a new call. ${prepared.tool.name} did not run.`,
          details: { path: `_meta.${IDEMPOTENCY_META_KEY}` },
          retryable: false,
        }),
      };
    case "in_progress":
      return {
        result: notStartedResult(prepared.call, "fatal_error", {
          code: "IDEMPOTENCY_KEY_IN_USE",
          message: `A call with this idempotency key is still running; repeat it after ${acquired.retryAfterSeconds} s to get its result.`,
          details: { retryAfterSeconds: acquired.retryAfterSeconds },
          retryable: true,
        }),
      };
    case "completed": {
      if (acquired.response.status === STORED_PENDING) {
        const pointer = JSON.parse(acquired.response.body) as PendingPointer;
        return { result: await followApproval(context, pointer, runScope) };
      }
      return { result: JSON.parse(acquired.response.body) as ToolResult, replayed: true };
    }
    case "acquired":
      return { result: await runClaimed(context, acquired.claim, runId, runScope) };
  }
}

/** Runs a claimed call (or parks it for approval) and stores what a repeat must see. */
async function runClaimed(
  context: CallContext,
  claim: IdempotencyClaim,
  runId: string,
  runScope: string,
): Promise<ToolResult> {
  const { deps, security, prepared } = context;
  const preview = await checkApproval(context);
  if (preview.kind === "failed") {
    await deps.idempotency.release(claim);
    return preview.result;
  }
  if (preview.preview) {
    const approval = await requestApproval(context, runId, preview.preview);
    const pointer: PendingPointer = { runId, approvalId: approval.approvalId };
    await deps.idempotency.complete(claim, {
      status: STORED_PENDING,
      headers: {},
      body: JSON.stringify(pointer),
    });
    return pendingResult(context, approval);
  }
  const result = await execute(context, runId, runScope);
  // As the HTTP API keeps 5xx outcomes out of its records: a failure that may be retried releases the
  // key (the tool's own key still makes a committed effect once), every other result is kept for replay.
  if (result.status === "fatal_error" && result.error?.retryable) await deps.idempotency.release(claim);
  else {
    const stored = await deps.idempotency.complete(claim, {
      status: STORED_RESULT,
      headers: {},
      body: JSON.stringify(result),
    });
    if (stored !== "completed") {
      deps.logger.warn("mcp idempotency record not completed", {
        toolName: prepared.tool.name,
        stored,
        tenantId: security.tenantId,
      });
    }
  }
  return result;
}

/** The dispatcher's run of the prepared call, under the call's deadline. */
function execute(context: CallContext, runId: string, runScope: string): Promise<ToolResult> {
  return runPreparedCall(context.prepared, context.security, {
    runId,
    runScope,
    occurrence: 0,
    signal: context.deadline.signal,
    remainingMs: () => context.deadline.remainingMs(),
  });
}

/** Asks the tool's approval policy, as the loop does (a policy that throws: APPROVAL_CHECK_FAILED). */
async function checkApproval(
  context: CallContext,
): Promise<{ kind: "ok"; preview: ApprovalPreview | null } | { kind: "failed"; result: ToolResult }> {
  const { tool, args, call } = context.prepared;
  if (!tool.needsApproval) return { kind: "ok", preview: null };
  try {
    return {
      kind: "ok",
      preview: await tool.needsApproval(args as never, context.security, { signal: context.deadline.signal }),
    };
  } catch (error) {
    return {
      kind: "failed",
      result: notStartedResult(call, "fatal_error", {
        code: "APPROVAL_CHECK_FAILED",
        message: `${call.name} did not run: whether it needs approval could not be checked (${(error as Error).message}). The same call can be made again.`,
        retryable: true,
      }),
    };
  }
}

/**
 * Stores the approval of a parked call: id derived from (tenant, MCP run, tool), no durable callback
 * (empty callback id: the decision is read back by the next call with the key), announced as the loop's
 * approvals are (a failed announcement is logged; the approval is listed either way).
 */
async function requestApproval(
  context: CallContext,
  runId: string,
  preview: ApprovalPreview,
): Promise<ApprovalRecord> {
  const { deps, security, prepared } = context;
  const requestedAt = new Date();
  const approval = await deps.approvals.request({
    approvalId: `apr_${sha256Hex(`${security.tenantId}\n${runId}\n${prepared.tool.name}`).slice(0, 32)}`,
    runId,
    tenantId: security.tenantId,
    toolName: prepared.tool.name,
    toolCallId: prepared.call.id,
    arguments: prepared.args,
    preview: { ...preview },
    requestedBy: security.userId,
    requestedAt: requestedAt.toISOString(),
    expiresAt: new Date(requestedAt.getTime() + deps.config.approvals.timeoutSeconds * 1000).toISOString(),
    callbackId: "",
    waitName: "mcp",
  });
  await deps.approvalEvents
    .requested({
      tenantId: security.tenantId,
      runId,
      approvalId: approval.approvalId,
      toolName: approval.toolName,
      preview: approval.preview,
      requestedBy: approval.requestedBy,
      requestedAt: approval.requestedAt,
      expiresAt: approval.expiresAt,
    })
    .catch((error: unknown) =>
      deps.logger.warn("approval event not sent", { approvalId: approval.approvalId, error: error as Error }),
    );
  return approval;
}

/** business_error APPROVAL_PENDING naming the approval: id, run, the backend's preview, expiry. */
function pendingResult(context: CallContext, approval: ApprovalRecord): ToolResult {
  return notStartedResult(context.prepared.call, "business_error", {
    code: "APPROVAL_PENDING",
    message: `${approval.toolName} waits for a person's approval (${approval.approvalId}, expires ${approval.expiresAt}); it has not run. Once it is decided (POST /v1/runs/${approval.runId}/approvals/${approval.approvalId}), repeat this same call with the same idempotency key to get the outcome.`,
    details: {
      approvalId: approval.approvalId,
      runId: approval.runId,
      preview: approval.preview,
      expiresAt: approval.expiresAt,
    },
    retryable: true,
  });
}

/**
 * A repeat of a parked call: still pending → the pending result again; approved → the call runs now
 * (through the dispatcher with the key's run scope, so its tool idempotency key is the same on every
 * repeat and the tool's conditional write makes the effect once); rejected, expired or cancelled → the
 * matching business error, and nothing runs.
 */
async function followApproval(
  context: CallContext,
  pointer: PendingPointer,
  runScope: string,
): Promise<ToolResult> {
  const { deps, security } = context;
  const found = await deps.approvals.get(security.tenantId, pointer.runId, pointer.approvalId);
  let approval = found?.approval;
  if (approval?.status === "pending" && Date.parse(approval.expiresAt) <= Date.now()) {
    approval =
      (await deps.approvals.expire(security.tenantId, pointer.runId, pointer.approvalId)) ?? approval;
  }
  if (!approval || approval.status === "pending") {
    return approval
      ? pendingResult(context, approval)
      : decided(context, pointer, "APPROVAL_EXPIRED", "its approval no longer exists");
  }
  if (approval.status === "approved") {
    const result = await execute(context, pointer.runId, runScope);
    return { ...result, metadata: { ...result.metadata, approval: auditOf(approval) } };
  }
  const code = {
    rejected: "APPROVAL_REJECTED",
    expired: "APPROVAL_EXPIRED",
    cancelled: "APPROVAL_CANCELLED",
  }[approval.status];
  const why = {
    rejected: `a person rejected it. Reason: ${approval.reason ?? "none given"}`,
    expired: `nobody approved it before its approval expired at ${approval.expiresAt}`,
    cancelled: "its approval was withdrawn",
  }[approval.status];
  const result = decided(context, pointer, code, why, approval.reason);
  return { ...result, metadata: { ...result.metadata, approval: auditOf(approval) } };
}

/** The business error of a decided call that does not run. */
function decided(
  context: CallContext,
  pointer: PendingPointer,
  code: string,
  why: string,
  reason: string | null = null,
): ToolResult {
  return notStartedResult(context.prepared.call, "business_error", {
    code,
    message: `${context.prepared.tool.name} did not run: ${why}.`,
    details: { approvalId: pointer.approvalId, runId: pointer.runId, reason },
    retryable: false,
  });
}

/** The approval audit a decided result carries (who, when, why), as the loop's results do. */
function auditOf(approval: ApprovalRecord) {
  return {
    approvalId: approval.approvalId,
    decision: approval.status as "approved" | "rejected" | "expired",
    decidedBy: approval.decidedBy,
    decidedAt: approval.decidedAt ?? "",
    reason: approval.reason,
  };
}

/**
 * The audit of one MCP call, where the loop's tool calls are audited: a run record of one cycle in the
 * run store (run id = the call's `io.boundloop/toolCallId`, `reason` "mcp tools/call", the step's
 * `finishReason` "mcp", no model call: zero tokens), visible to its user at `GET /v1/runs/{runId}`; the
 * log line and metrics of {@link recordToolResultMetric} with `surface: "mcp"`. A failed audit write is
 * logged and does not change the call's result (as the loop's observers).
 */
async function observe(
  deps: McpCallDeps,
  security: SecurityContext,
  call: { id: string; name: string; arguments: string },
  result: ToolResult,
  replayed: boolean,
  budgetMs: number,
): Promise<void> {
  const usage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  try {
    await deps.runs.start({
      tenantId: security.tenantId,
      runId: call.id,
      userId: security.userId,
      prompt: `mcp tools/call ${call.name}`,
      limits: { maxCycles: 1, timeoutMs: Math.max(1, budgetMs) },
    });
    await deps.runs.appendStep(
      security.tenantId,
      call.id,
      {
        cycle: 1,
        request: { messageCount: 0, toolsOffered: [call.name] },
        finishReason: "mcp",
        modelLatencyMs: 0,
        usage,
        toolCalls: [{ ...call, result }],
      },
      usage,
    );
    await deps.runs.finish(security.tenantId, call.id, {
      status: "completed",
      cycles: 1,
      answer: null,
      reason: "mcp tools/call",
      usage,
      durationMs: result.metadata.latencyMs,
    });
  } catch (error) {
    deps.logger.error("mcp call audit not written", { toolCallId: call.id, error: error as Error });
  }
  logResult(deps, result, replayed);
}

/** The audit line and metrics of one MCP tool result (the loop's, with `surface: "mcp"`). */
function logResult(deps: McpCallDeps, result: ToolResult, replayed: boolean): void {
  deps.logger.info("tool result", {
    surface: "mcp",
    toolName: result.metadata.toolName,
    toolCallId: result.metadata.toolCallId,
    status: result.status,
    errorCode: result.error?.code ?? null,
    latencyMs: result.metadata.latencyMs,
    idempotencyKey: result.metadata.idempotencyKey,
    replayed,
  });
  recordToolResultMetric(deps.metrics, result, "mcp");
}

/**
 * A dispatcher result as an MCP CallToolResult: a success has the data as JSON text and, for a tool with
 * an `outputSchema`, as `structuredContent`; a failure is `isError: true` with `{ status, error }` (code,
 * message, details with field paths, retryable) as JSON text.
 */
export function toMcpResult(
  result: ToolResult,
  prepared: PreparedToolCall | undefined,
  replayed = false,
): McpToolResult {
  const meta = {
    "io.boundloop/toolCallId": result.metadata.toolCallId,
    ...(result.metadata.approval ? { "io.boundloop/approval": result.metadata.approval } : {}),
    ...(replayed ? { [REPLAYED_META_KEY]: true } : {}),
  };
  if (result.status === "success") {
    const structured =
      prepared?.tool.outputSchema &&
      result.data &&
      typeof result.data === "object" &&
      !Array.isArray(result.data)
        ? { structuredContent: result.data as Record<string, unknown> }
        : {};
    return {
      content: [{ type: "text", text: JSON.stringify(result.data) }],
      ...structured,
      isError: false,
      _meta: meta,
    };
  }
  // No structuredContent on a failure: clients validate any structuredContent against the tool's
  // outputSchema, which describes success.
  const failure = { status: result.status, error: result.error };
  return { content: [{ type: "text", text: JSON.stringify(failure) }], isError: true, _meta: meta };
}
