import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IDEMPOTENCY_META_KEY } from "../shared/mcp/mapping.js";
import { createDocumentClient } from "../shared/store/dynamo.js";
import { QuoteStore } from "../shared/store/quotes.js";
import { accountingTools } from "../shared/tools/registry.js";
import { GBP_RULES } from "./support/approvals.js";
import { type McpStack, startMcpStack, WRITER } from "./support/mcp.js";
import { captureOutput } from "./support/reliability.js";

// An MCP call's failures never reach the client as internal error text, and every call, however
// odd its arguments, is answered as a tool result, logged and audited like any run.

type CallResult = {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  _meta?: Record<string, unknown>;
};
const text = (result: unknown) => JSON.parse(((result as CallResult).content[0]?.text ?? "null") as string);

describe("MCP: the approval check meets a store failure", () => {
  let mcp: McpStack;
  beforeAll(async () => {
    // recordInvoice's approval rule (a Cedar policy: docs/policies.md) needs the quote's facts from a
    // store that cannot be reached: a real DynamoDB client on a closed port (the SDK's own connection
    // error, with its address in the text). The policy decision refuses the call (fail closed).
    mcp = await startMcpStack({ APPROVAL_RULES: GBP_RULES }, (deps) =>
      accountingTools({
        ledger: deps.ledger,
        quotes: new QuoteStore(
          createDocumentClient({
            ...deps.config.table,
            endpoint: "http://127.0.0.1:9",
            requestTimeoutMs: 300,
          }),
          deps.config.table.name,
        ),
        quoteTtlSeconds: deps.config.quotes.ttlSeconds,
      }),
    );
  });
  afterAll(async () => {
    await mcp?.stop();
  });

  it("answers a retryable fixed sentence without the store's error text, and logs the detail", async () => {
    const client = await mcp.connect(await mcp.token(WRITER));
    const output = captureOutput();
    let result: CallResult;
    try {
      result = (await client.callTool({
        name: "recordInvoice",
        arguments: { clientName: "Acme Ltd", quoteId: "qt_0123456789abcdef0123456789abcdef" },
        _meta: { [IDEMPOTENCY_META_KEY]: "guard-store-1" },
      })) as CallResult;
    } finally {
      output.stop();
    }
    expect(result.isError).toBe(true);
    const body = text(result);
    expect(body).toMatchObject({
      status: "fatal_error",
      error: { code: "POLICY_CHECK_FAILED", retryable: true },
    });
    expect(body.error.message).toBe(
      "recordInvoice did not run: the tenant's policies could not be evaluated. The same call can be made again.",
    );
    expect(JSON.stringify(result)).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|connect|Timeout/i);
    // The detail is in the log (for the operator), as the loop logs a policy decision that failed.
    expect(output.text()).toMatch(/"message":"policy decision failed".*"code":"POLICY_CHECK_FAILED"/);
    expect(output.text()).toMatch(/"stage":"[^"]+".*127\.0\.0\.1|ECONNREFUSED|Timeout/i);
  });
});

describe("MCP: arguments nested thousands of levels deep", () => {
  let mcp: McpStack;
  beforeAll(async () => {
    mcp = await startMcpStack();
  });
  afterAll(async () => {
    await mcp?.stop();
  });

  it("are a validation_error tool result, logged and in the audit trail, not JSON-RPC -32603", async () => {
    // Written as text: a JSON encoder of this process would itself run out of stack on it.
    const depth = 5_000;
    const nested = `${'{"a":'.repeat(depth)}"x"${"}".repeat(depth)}`;
    const args = `{"amount":"1.00","currency":"GBP","jurisdiction":"GB","deep":${nested}}`;
    const body = `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"calculateTax","arguments":${args}}}`;
    const output = captureOutput();
    let response: Response;
    try {
      response = await fetch(mcp.mcpUrl, {
        method: "POST",
        headers: {
          authorization: `Bearer ${await mcp.token(WRITER)}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body,
      });
    } finally {
      output.stop();
    }
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { error?: unknown; result?: CallResult };
    expect(answer.error).toBeUndefined();
    const result = answer.result as CallResult;
    expect(result.isError).toBe(true);
    expect(text(result)).toMatchObject({ status: "validation_error", error: { code: "INVALID_ARGUMENTS" } });
    expect(JSON.stringify(result)).not.toMatch(/call stack/i);
    expect(output.text()).toMatch(/"message":"tool result".*"errorCode":"INVALID_ARGUMENTS"/);
    const runId = String(result._meta?.["io.boundloop/toolCallId"]);
    const run = await mcp.api(`/v1/runs/${runId}`, { sub: WRITER.sub, tenant_id: WRITER.tenant_id });
    expect(run.status).toBe(200);
    expect(await run.json()).toMatchObject({ status: "completed", reason: "mcp tools/call", cycles: 1 });
  });
});

describe("MCP: a call's log lines are its own invocation's", () => {
  let mcp: McpStack;
  beforeAll(async () => {
    mcp = await startMcpStack();
  });
  afterAll(async () => {
    await mcp?.stop();
  });

  it("carry the Lambda request id of the /mcp request (not the last /v1 request's) and end with its request line", async () => {
    const client = await mcp.connect(await mcp.token(WRITER));
    const output = captureOutput();
    let result: CallResult;
    try {
      // A /v1 request first, in the same warm container: its Lambda context must not label the MCP call.
      expect((await mcp.api("/v1/invoices", WRITER)).status).toBe(200);
      result = (await client.callTool({
        name: "calculateTax",
        arguments: { amount: "10.00", currency: "GBP", jurisdiction: "GB" },
      })) as CallResult;
    } finally {
      output.stop();
    }
    const logs = output
      .text()
      .split("\n")
      .filter((line) => line.startsWith('{"level"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const v1 = logs.find((log) => log.message === "request" && log.path === "/v1/invoices");
    const runId = String(result._meta?.["io.boundloop/toolCallId"]);
    const call = logs.filter((log) => log.runId === runId);
    expect(call.map((log) => log.message)).toEqual(["run started", "tool result", "run finished", "request"]);
    const requestId = call[0]?.function_request_id;
    expect(requestId).toEqual(expect.any(String));
    expect(requestId).not.toBe(v1?.function_request_id);
    for (const log of call) expect(log.function_request_id).toBe(requestId);
    // The request line, as every /v1 request has: method, path, status, latency, the caller's tenant.
    expect(call.at(-1)).toMatchObject({
      method: "POST",
      path: "/mcp",
      httpStatus: 200,
      latencyMs: expect.any(Number),
      tenantId: WRITER.tenant_id,
    });
    // Its metrics are published by the request that counted them.
    const emf = output
      .text()
      .split("\n")
      .filter((line) => line.includes('"ToolResults"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(emf).toContainEqual(
      expect.objectContaining({
        toolName: "calculateTax",
        surface: "mcp",
        status: "success",
        ToolResults: 1,
      }),
    );
  });
});
