import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandler } from "../functions/api/app-handler.js";
import { GatewayErrorSchema } from "../functions/api/contract.js";
import { printedApprovalEvents } from "../local/approval-events.js";
import {
  createDevIssuer,
  DEMO_CLAIMS,
  type DevIssuerFile,
  devAuthSettings,
  mintToken,
} from "../local/dev-auth.js";
import { type DevServer, type Handler, startDevServer } from "../local/dev-server.js";
import { LocalDurableExecutions } from "../local/durable-executions.js";
import { createTokenVerifier } from "../shared/auth/token-verifier.js";
import { createDurableRunHandler } from "../shared/durable/runner.js";
import { heldReply } from "./support/held.js";
import { startTestStack, type TestStack } from "./support/stack.js";

/**
 * The OpenAPI document checked against the running API by a third-party validator: Stoplight Prism
 * (`prism proxy --errors`) in front of the local dev server (local/dev-server.ts: the gateway's JWT
 * check, then the real Lambda handler over DynamoDB Local and the local model server). Prism validates
 * every request and every response (status, headers, body against the strict schemas) against the
 * document the API serves, and reports each violation, warnings included, in an `sl-violations`
 * response header; with `--errors` an error-level violation also replaces the response. Every
 * response here must come back with the expected status and no violation. Durable runs
 * (`Prefer: respond-async`) run on the testing SDK's local runner (local/durable-executions.ts) over the
 * same table and model server.
 */
const PRISM = new URL("../node_modules/@stoplight/prism-cli/dist/index.js", import.meta.url).pathname;

let stack: TestStack;
let dev: DevServer;
let issuer: DevIssuerFile;
let token: string;
let executions: LocalDurableExecutions;
/** The proxy over the served document, and the one over a copy that forgets a field (the control). */
let prism: { url: string; process: ChildProcess };
let forgetfulPrism: { url: string; process: ChildProcess };

/** A loopback port nothing listens on right now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Starts `prism proxy <document> <upstream> --errors` and resolves once it listens. */
async function startPrism(
  document: unknown,
  upstream: string,
): Promise<{ url: string; process: ChildProcess }> {
  const file = join(mkdtempSync(join(tmpdir(), "boundloop-prism-")), "openapi.json");
  writeFileSync(file, JSON.stringify(document));
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      PRISM,
      "proxy",
      file,
      upstream,
      "--errors",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--cors",
      "false",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Prism did not start:\n${output}`)), 60_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      if (output.includes("Prism is listening")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on("data", read);
    child.stderr?.on("data", read);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`Prism exited with ${code}:\n${output}`));
    });
  });
  return { url: `http://127.0.0.1:${port}`, process: child };
}

/** One exchange through a Prism proxy: status, headers, parsed body, and Prism's violations. */
async function through(
  prism: { url: string },
  path: string,
  init: { method?: string; token?: string | null; body?: unknown; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = {
    accept: "application/json, application/problem+json",
    ...init.headers,
  };
  const bearer = init.token === undefined ? token : init.token;
  if (bearer !== null) headers.authorization = `Bearer ${bearer}`;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${prism.url}${path}`, {
    method: init.method ?? "GET",
    headers,
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined,
    violations: JSON.parse(response.headers.get("sl-violations") ?? "[]") as Array<{ message: string }>,
  };
}

/** Asserts Prism passed the exchange: the expected status and not a single violation. */
function conforming(exchange: Awaited<ReturnType<typeof through>>, status: number) {
  expect(exchange.violations, JSON.stringify(exchange.body)).toEqual([]);
  expect(exchange.status, JSON.stringify(exchange.body)).toBe(status);
  return exchange;
}

beforeAll(async () => {
  // Approvals on for BDT only: the other requests here (GBP, no recording in BDT) never pause.
  stack = await startTestStack({ APPROVAL_RULES: JSON.stringify({ recordInvoice: { BDT: "100" } }) });
  issuer = await createDevIssuer();
  token = await mintToken(issuer, { ...DEMO_CLAIMS });
  const runnerDeps = { ...stack.deps, approvalEvents: printedApprovalEvents(() => {}) };
  executions = new LocalDurableExecutions((options) => createDurableRunHandler(runnerDeps, options));
  dev = await startDevServer({
    serve: {
      handler: createHandler({ ...stack.deps, executions }) as Handler,
      verifier: createTokenVerifier(devAuthSettings(issuer)),
      timeoutMs: 29_000,
    },
    host: "127.0.0.1",
    port: 0,
    log: () => undefined,
  });
  const document = (await (await fetch(`${dev.url}/openapi.json`)).json()) as {
    components: { schemas: Record<string, { required?: string[]; properties?: Record<string, unknown> }> };
  };
  // A copy that forgets one field the API returns: the control that the validator does catch it.
  const forgetful = structuredClone(document);
  const invoice = forgetful.components.schemas.Invoice;
  delete invoice?.properties?.quoteId;
  if (invoice?.required) invoice.required = invoice.required.filter((name) => name !== "quoteId");
  [prism, forgetfulPrism] = await Promise.all([
    startPrism(document, dev.url),
    startPrism(forgetful, dev.url),
  ]);
}, 120_000);

afterAll(async () => {
  prism?.process.kill("SIGTERM");
  forgetfulPrism?.process.kill("SIGTERM");
  await executions?.shutdown();
  await dev?.stop();
  await stack?.stop();
});

describe("the API as Prism sees it through the OpenAPI document", () => {
  it("conforms on a representative set of requests: runs, replay, 409, 422, invoices, 400, 401, 404", async () => {
    const prompt = "Calculate tax on 1500 GBP for a client in the UK and record the invoice for Acme Ltd.";
    const key = `prism-${randomUUID()}`;

    conforming(await through(prism, "/healthz", { token: null }), 200);

    // A run, and its replay under the same Idempotency-Key.
    const run = conforming(
      await through(prism, "/v1/runs", {
        method: "POST",
        body: { prompt },
        headers: { "idempotency-key": key },
      }),
      200,
    );
    expect(run.body?.status).toBe("completed");
    expect(run.headers.get("idempotent-replayed")).toBeNull();
    const replay = conforming(
      await through(prism, "/v1/runs", {
        method: "POST",
        body: { prompt },
        headers: { "idempotency-key": key },
      }),
      200,
    );
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(run.body);

    // The same key for another body: 422.
    const reused = conforming(
      await through(prism, "/v1/runs", {
        method: "POST",
        body: { prompt: `${prompt} Twice.` },
        headers: { "idempotency-key": key },
      }),
      422,
    );
    expect(reused.body?.code).toBe("IDEMPOTENCY_KEY_REUSED");

    // The same key while its first request still runs: 409 with Retry-After.
    // Its model call is held until the second request has its answer.
    const { heldUntil, release } = heldReply();
    stack.model.script([{ content: "Nothing to do.", heldUntil }]);
    const slowKey = `prism-slow-${randomUUID()}`;
    const requestsBefore = stack.model.requests.length;
    const slow = through(prism, "/v1/runs", {
      method: "POST",
      body: { prompt: "Say hello." },
      headers: { "idempotency-key": slowKey },
    });
    try {
      while (stack.model.requests.length === requestsBefore) await new Promise((r) => setTimeout(r, 20));
      const busy = conforming(
        await through(prism, "/v1/runs", {
          method: "POST",
          body: { prompt: "Say hello." },
          headers: { "idempotency-key": slowKey },
        }),
        409,
      );
      expect(busy.body?.code).toBe("IDEMPOTENCY_KEY_IN_USE");
      expect(Number(busy.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    } finally {
      release();
    }
    conforming(await slow, 200);
    stack.model.usePlanner();

    // The stored run with its audit steps.
    const stored = conforming(await through(prism, `/v1/runs/${String(run.body?.runId)}`), 200);
    expect(stored.body?.status).toBe("completed");

    // Invoices: the page, one invoice, an unknown one (404) and a bad cursor (400).
    const page = conforming(await through(prism, "/v1/invoices?limit=5"), 200);
    const items = page.body?.items as Array<{ invoiceId: string; quoteId: string }>;
    expect(items).toHaveLength(1);
    const one = conforming(await through(prism, `/v1/invoices/${items[0]?.invoiceId}`), 200);
    expect(one.body?.quoteId).toBe(items[0]?.quoteId);
    const missing = conforming(await through(prism, "/v1/invoices/inv_000000000000000000000000"), 404);
    expect(missing.body?.code).toBe("NOT_FOUND");
    const badCursor = conforming(await through(prism, "/v1/invoices?cursor=bm90LWEtY3Vyc29y"), 400);
    expect(badCursor.body?.code).toBe("INVALID_REQUEST");

    // 401 from the function (a valid token without a tenant). The gateway's own 401 (an invalid token:
    // `{"message":"Unauthorized"}`, application/json) is declared next to it, but Prism 5 matches a
    // response's media type ignoring the `+json` suffix, so it would check that body against the first
    // JSON content of the status (the problem): it is checked against the document below instead.
    const noTenant = await mintToken(issuer, { sub: "usr_demo", scope: "billing:read" });
    const app = conforming(await through(prism, "/v1/invoices", { token: noTenant }), 401);
    expect(app.body?.code).toBe("UNAUTHENTICATED");
    expect(app.headers.get("content-type")).toBe("application/problem+json");
    expect(app.headers.get("www-authenticate")).toMatch(/^Bearer /);

    // /mcp's own 401 is problem+json too; this server's configuration names neither the issuer nor the
    // MCP resource, so it refuses every token and its metadata is 404.
    const mcp = conforming(await through(prism, "/mcp"), 401);
    expect(mcp.body?.code).toBe("UNAUTHENTICATED");
    expect(mcp.headers.get("www-authenticate")).toContain(
      'error_description="this deployment accepts no tokens',
    );
    const metadata = conforming(
      await through(prism, "/.well-known/oauth-protected-resource/mcp", { token: null }),
      404,
    );
    expect(metadata.body?.code).toBe("NOT_FOUND");
  }, 120_000);

  it("conforms on an asynchronous start (202), its replay, the polls, a cancel and a cancel too late (409)", async () => {
    const prompt = "Calculate tax on 1500 GBP for a client in the UK and record the invoice for Acme Ltd.";
    const key = `prism-async-${randomUUID()}`;
    const start = () =>
      through(prism, "/v1/runs", {
        method: "POST",
        body: { prompt },
        headers: { "idempotency-key": key, prefer: "respond-async" },
      });

    const accepted = conforming(await start(), 202);
    const runId = String(accepted.body?.runId);
    expect(accepted.body?.status).toBe("running");
    expect(accepted.headers.get("location")).toBe(`/v1/runs/${runId}`);
    expect(accepted.headers.get("retry-after")).toBe("1");
    expect(accepted.headers.get("preference-applied")).toBe("respond-async");
    const replayed = conforming(await start(), 202);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    expect(replayed.headers.get("location")).toBe(`/v1/runs/${runId}`);
    expect(replayed.body?.runId).toBe(runId);

    // Polls: `running` with Retry-After, then the outcome without it.
    let polled = conforming(await through(prism, `/v1/runs/${runId}`), 200);
    const statuses = [polled.body?.status];
    while (polled.body?.status === "running") {
      expect(polled.headers.get("retry-after")).toBe("1");
      await new Promise((resolve) => setTimeout(resolve, 100));
      polled = conforming(await through(prism, `/v1/runs/${runId}`), 200);
      statuses.push(polled.body?.status);
    }
    expect(polled.body).toMatchObject({ status: "completed", cycles: 3, cyclesRecorded: 3 });
    expect(polled.headers.get("retry-after")).toBeNull();

    const late = conforming(await through(prism, `/v1/runs/${runId}/cancel`, { method: "POST" }), 409);
    expect(late.body).toMatchObject({ code: "RUN_NOT_RUNNING", runId, runStatus: "completed" });

    // A run stopped during a slow model call: 200 with the record, now `cancelled`.
    const requestsBefore = stack.model.requests.length;
    stack.model.script([{ content: "Too late.", delayMs: 2_000 }]);
    const slow = conforming(
      await through(prism, "/v1/runs", {
        method: "POST",
        body: { prompt: "Say hello." },
        headers: { prefer: "respond-async" },
      }),
      202,
    );
    while (stack.model.requests.length === requestsBefore)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const cancelled = conforming(
      await through(prism, `/v1/runs/${String(slow.body?.runId)}/cancel`, { method: "POST" }),
      200,
    );
    expect(cancelled.body).toMatchObject({ status: "cancelled", cyclesRecorded: 0, steps: [] });
    await executions.settled();
    stack.model.usePlanner();
  }, 120_000);

  it("conforms on a synchronous run that pauses for approval (202 without Preference-Applied), the inbox, the decision and the polls", async () => {
    const paused = conforming(
      await through(prism, "/v1/runs", {
        method: "POST",
        body: { prompt: "Calculate tax on 200 BDT for a client in Bangladesh and record it" },
      }),
      202,
    );
    const runId = String(paused.body?.runId);
    expect(paused.body?.status).toBe("awaiting_approval");
    expect(paused.headers.get("location")).toBe(`/v1/runs/${runId}`);
    expect(paused.headers.get("retry-after")).toBe("1");
    expect(paused.headers.get("preference-applied")).toBeNull();
    const [pending] = (paused.body?.pendingApprovals ?? []) as Array<{ approvalId: string }>;

    const approver = await mintToken(issuer, {
      ...DEMO_CLAIMS,
      sub: "usr_approver_prism",
      scope: "billing:approve",
    });
    const inbox = conforming(await through(prism, "/v1/approvals", { token: approver }), 200);
    expect(JSON.stringify(inbox.body)).toContain(String(pending?.approvalId));
    const decided = conforming(
      await through(prism, `/v1/runs/${runId}/approvals/${String(pending?.approvalId)}`, {
        method: "POST",
        token: approver,
        body: { decision: "approve", reason: "Checked." },
      }),
      200,
    );
    expect(decided.body?.status).toBe("approved");
    const history = conforming(
      await through(prism, "/v1/approvals?status=decided", { token: approver }),
      200,
    );
    expect((history.body?.items ?? []) as unknown[]).toHaveLength(1);
    expect(
      ((history.body?.items ?? []) as Array<{ approvalId: string; decidedBy: string }>)[0],
    ).toMatchObject({
      approvalId: pending?.approvalId,
      decidedBy: "usr_approver_prism",
    });

    let polled = conforming(await through(prism, `/v1/runs/${runId}`), 200);
    while (polled.body?.status === "running" || polled.body?.status === "awaiting_approval") {
      await new Promise((resolve) => setTimeout(resolve, 100));
      polled = conforming(await through(prism, `/v1/runs/${runId}`), 200);
    }
    expect(polled.body?.status).toBe("completed");
    await executions.settled();
  }, 120_000);

  it("the gateway's 401 is the document's GatewayError with a WWW-Authenticate challenge", async () => {
    const document = (await (await fetch(`${dev.url}/openapi.json`)).json()) as {
      paths: Record<
        string,
        Record<string, { responses: Record<string, { content: Record<string, unknown> }> }>
      >;
    };
    expect(document.paths["/v1/invoices"]?.get?.responses["401"]?.content["application/json"]).toEqual({
      schema: { $ref: "#/components/schemas/GatewayError" },
    });
    const response = await fetch(`${dev.url}/v1/invoices`, {
      headers: { authorization: "Bearer not.a.jwt" },
    });
    expect(response.status).toBe(401);
    expect(response.headers.get("content-type")).toBe("application/json");
    // As API Gateway writes it (docs.aws.amazon.com, "Troubleshooting issues with HTTP API JWT authorizers").
    expect(response.headers.get("www-authenticate")).toMatch(
      /^Bearer scope="" error="invalid_token" error_description="/,
    );
    expect(GatewayErrorSchema.parse(await response.json())).toEqual({ message: "Unauthorized" });
  });

  it("does report a field the document does not declare (the control)", async () => {
    const page = conforming(await through(prism, "/v1/invoices"), 200);
    const items = (page.body?.items ?? []) as Array<{ invoiceId: string }>;
    const id = items[0]?.invoiceId;
    expect(id).toMatch(/^inv_/);
    const flagged = await through(forgetfulPrism, `/v1/invoices/${id}`);
    expect(flagged.violations.map((violation) => violation.message).join("\n")).toMatch(
      /quoteId|additional/i,
    );
    expect(flagged.status).not.toBe(200);
  }, 60_000);
});
