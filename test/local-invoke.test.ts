import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type LocalModelServer, startModelServer } from "../local/model-server.js";
import type { ToolResult } from "../shared/agent/result.js";
import { loadConfig } from "../shared/config.js";
import { createDocumentClient } from "../shared/store/dynamo.js";
import { LedgerStore } from "../shared/store/ledger.js";
import { type InvokeOutput, parseInvokeOutput, runScript } from "./support/scripts.js";

// `npm run invoke` on every events/ file, through the real script (node --import tsx local/invoke.ts)
// against the suite's DynamoDB and a local model server this file starts (DYNAMODB_ENDPOINT and
// OPENAI_BASE_URL: the "use an existing one" path; test/local-processes.test.ts covers the script
// starting its own). The events that need no process of their own run in two batches, side by side, and
// the two that need theirs done (a continuation, a replayed key) in one process after them.

let model: LocalModelServer;
let env: Record<string, string>;
let ledger: LedgerStore;
let destroy: () => void;

beforeAll(async () => {
  model = await startModelServer();
  env = {
    DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
    OPENAI_BASE_URL: model.baseURL,
    TABLE_NAME: `test-invoke-${randomUUID()}`,
  };
  const config = loadConfig(env);
  const ddb = createDocumentClient(config.table);
  ledger = new LedgerStore(ddb, config.table.name);
  destroy = () => ddb.destroy();
});
afterAll(async () => {
  destroy?.();
  await model?.stop();
});

interface RunBody {
  runId: string;
  status: string;
  cycles: number;
  toolResults: ToolResult[];
}

/** Runs `local/invoke.ts <args>` and parses what it printed. */
async function invoke(
  args: string[],
  extraEnv: Record<string, string> = {},
): Promise<{ code: number | null; out: InvokeOutput; stderr: string }> {
  const { code, stdout, stderr } = await runScript("tsx", ["local/invoke.ts", ...args], {
    ...env,
    ...extraEnv,
  });
  return { code, out: parseInvokeOutput(stdout), stderr };
}

const summary = (body: RunBody) =>
  body.toolResults.map((r) => `${r.metadata.toolName}:${r.status}${r.error ? `:${r.error.code}` : ""}`);

// Each case spawns a process that loads the handler: allow for a busy machine.
const SLOW = { timeout: 90_000 };

/**
 * One `npm run invoke` with several events in turn (one process start instead of one per event, as
 * docs/local-workflow.md tells users), with `extraEnv`: its exit status (the worst of the events'), and
 * for each event path what it printed: its stdout section and its stderr section after the lines every
 * event shares (the variable files read, the dependencies used).
 */
async function invokeBatch(
  paths: string[],
  extraEnv: Record<string, string> = {},
): Promise<Map<string, { code: number | null; out: InvokeOutput; stderr: string }>> {
  const { code, stdout, stderr } = await runScript("tsx", ["local/invoke.ts", ...paths], {
    ...env,
    ...extraEnv,
  });
  const outs = stdout.split(/^(?=HTTP \d{3}$)/m).map(parseInvokeOutput);
  const [preamble = "", ...sections] = stderr.split(/^(?=invoke: \S+ → )/m);
  expect([outs.length, sections.length], stdout + stderr).toEqual([paths.length, paths.length]);
  return new Map(
    paths.map((path, i) => {
      expect(sections[i]).toMatch(new RegExp(`^invoke: ${path.replaceAll(".", "\\.")} → `));
      return [path, { code, out: outs[i] as InvokeOutput, stderr: preamble + sections[i] }];
    }),
  );
}

/** The events answered 200 (exit status 0), invoked in one process on the file's table. */
const SUCCEEDING = [
  "events/seed-scenario.json",
  "events/no-billing-write.json",
  "events/de-only.json",
  "events/mixed-jurisdictions.json",
  "events/base64-body.json",
  "events/replay-idempotency-key.json",
  "events/rest-v1.json",
  "events/named-stage.json",
];
/** The events answered 4xx before any model call (exit status 1), invoked in one process. */
const REFUSED = [
  "events/malformed-body.json",
  "events/continue-conversation.json",
  "events/base64url-body.json",
];
/** What one event of a batch printed, with the batch's exit status. */
type Invoked = { code: number | null; out: InvokeOutput; stderr: string };
let succeeding: Awaited<ReturnType<typeof invokeBatch>>;
let refused: Awaited<ReturnType<typeof invokeBatch>>;
const REPLAY = "events/replay-idempotency-key.json";
/**
 * The local model server the refused events are sent to (in a batch of their own, beside the succeeding
 * one): every request it saw came from them.
 */
let refusedModel: LocalModelServer;
/** A copy of events/function-url.json without its .env.json next to it (no principal mapping). */
let unmappedFunctionUrl: string;

const CONVERSATION_EVENT = "events/continue-conversation.json";
/** The continuation event with `body` instead of its own, written to a temporary file. */
const conversationWith = (body: Record<string, unknown>) => {
  const event = JSON.parse(readFileSync(CONVERSATION_EVENT, "utf8")) as { body: string };
  event.body = JSON.stringify(body);
  const file = join(mkdtempSync(join(tmpdir(), "boundloop-conv-")), "event.json");
  writeFileSync(file, JSON.stringify(event));
  return file;
};
/** The first run of the continuation's user, invoked in the succeeding batch (its own tenant). */
let conversationStart: string;
/** The continuation of that first run (its id as previousRunId), invoked by {@link later}. */
let conversationNext: string;
let laterBatch: ReturnType<typeof invokeBatch> | undefined;
/**
 * What needs the batches done, in one process after them, invoked by the first test that asks (so the
 * tests before it see the table without it): the continuation of the first run, and {@link REPLAY} again.
 */
function later(): ReturnType<typeof invokeBatch> {
  if (!laterBatch) {
    const firstRunId = (JSON.parse(batched(conversationStart).out.body) as RunBody).runId;
    const event = JSON.parse(readFileSync(CONVERSATION_EVENT, "utf8")) as { body: string };
    const prompt = (JSON.parse(event.body) as { prompt: string }).prompt;
    conversationNext = conversationWith({ prompt, previousRunId: firstRunId });
    laterBatch = invokeBatch([conversationNext, REPLAY]);
  }
  return laterBatch;
}

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "boundloop-event-"));
  unmappedFunctionUrl = join(dir, "function-url.json");
  writeFileSync(unmappedFunctionUrl, readFileSync("events/function-url.json"));
  conversationStart = conversationWith({ prompt: "Calculate tax on 250 GBP for a client in the UK." });
  refusedModel = await startModelServer();
  // Two processes side by side on the file's table: the refused events' batch exits 1, the other 0.
  [refused, succeeding] = await Promise.all([
    invokeBatch([...REFUSED, unmappedFunctionUrl], { OPENAI_BASE_URL: refusedModel.baseURL }),
    invokeBatch([...SUCCEEDING, conversationStart]),
  ]);
}, 180_000);
afterAll(async () => {
  await refusedModel?.stop();
});

/** What one event of the batches printed, and the batch's exit status. */
const batched = (path: string) => {
  const result = succeeding.get(path) ?? refused.get(path);
  if (!result) throw new Error(`${path} is in no batch`);
  return result;
};

describe("npm run invoke on events/", SLOW, () => {
  it("seed-scenario.json: 200 completed, GB 300.00/1800.00, DE unsupported, one ledger row; logs on stderr", async () => {
    const { code, out, stderr } = batched("events/seed-scenario.json");
    expect(code).toBe(0);
    expect(out.status).toBe(200);
    expect(out.headers["content-type"]).toMatch(/^application\/json/);
    const body = JSON.parse(out.body) as RunBody;
    expect(body.status).toBe("completed");
    expect(summary(body)).toEqual([
      "calculateTax:success",
      "calculateTax:business_error:UNSUPPORTED_JURISDICTION",
      "recordInvoice:success",
    ]);
    expect(body.toolResults[0]?.data).toMatchObject({
      taxAmount: { amount: "300.00" },
      grossTotal: { amount: "1800.00" },
    });
    const rows = await ledger.list("tenant_uk_01");
    expect(rows.map((row) => row.runId)).toEqual([body.runId]);
    // The runtime's frame on stderr, the result alone on stdout.
    const requestId = /START RequestId: ([0-9a-f-]{36}) Version: \$LATEST/.exec(stderr)?.[1];
    expect(requestId).toBeDefined();
    expect(stderr).toContain(`END RequestId: ${requestId}`);
    expect(stderr).toMatch(new RegExp(`REPORT RequestId: ${requestId}\\tDuration: \\d+\\.\\d{2} ms`));
    expect(stderr).toContain(`dynamodb: using the existing endpoint ${env.DYNAMODB_ENDPOINT}`);
  });

  it("no-billing-write.json: 200 with status permission_denied, nothing written", async () => {
    const { code, out } = batched("events/no-billing-write.json");
    expect([code, out.status]).toEqual([0, 200]);
    const body = JSON.parse(out.body) as RunBody;
    expect(body.status).toBe("permission_denied");
    expect(summary(body)).toContain("recordInvoice:permission_denied:PERMISSION_DENIED");
    expect(await ledger.list("tenant_ro_01")).toHaveLength(0);
  });

  it("de-only.json: 200, one UNSUPPORTED_JURISDICTION business error, nothing recorded", async () => {
    const { code, out } = batched("events/de-only.json");
    expect([code, out.status]).toEqual([0, 200]);
    const body = JSON.parse(out.body) as RunBody;
    expect(body.status).toBe("completed");
    expect(summary(body)).toEqual(["calculateTax:business_error:UNSUPPORTED_JURISDICTION"]);
    expect(body.toolResults[0]?.error?.message).toContain("GB, BD");
  });

  it("mixed-jurisdictions.json: 200, GB and BD succeed and are recorded, DE and FR are unsupported", async () => {
    const { code, out } = batched("events/mixed-jurisdictions.json");
    expect([code, out.status]).toEqual([0, 200]);
    const body = JSON.parse(out.body) as RunBody;
    expect(body.status).toBe("completed");
    expect(summary(body)).toEqual([
      "calculateTax:success",
      "calculateTax:success",
      "calculateTax:business_error:UNSUPPORTED_JURISDICTION",
      "calculateTax:business_error:UNSUPPORTED_JURISDICTION",
      "recordInvoice:success",
      "recordInvoice:success",
    ]);
    const rows = await ledger.list("tenant_mix_01");
    expect(rows.map((row) => `${row.jurisdiction} ${row.taxAmount.amount}`).sort()).toEqual([
      "BD 3000.00",
      "GB 300.00",
    ]);
  });

  it("malformed-body.json: 400 problem+json INVALID_REQUEST, exit status 1, no model call", async () => {
    const { code, out } = batched("events/malformed-body.json");
    expect(code).toBe(1);
    expect(out.status).toBe(400);
    expect(out.headers["content-type"]).toBe("application/problem+json");
    expect(JSON.parse(out.body)).toMatchObject({ status: 400, code: "INVALID_REQUEST" });
    // Its prompt (1234 GBP) never reached a model.
    expect(
      [...refusedModel.requests, ...model.requests].some((request) =>
        JSON.stringify(request.messages).includes("1234 GBP"),
      ),
    ).toBe(false);
  });

  it("base64-body.json: the body is decoded; 200, BD 30.00 tax on 200.00 BDT, recorded", async () => {
    const { code, out } = batched("events/base64-body.json");
    expect([code, out.status]).toEqual([0, 200]);
    const body = JSON.parse(out.body) as RunBody;
    expect(summary(body)).toEqual(["calculateTax:success", "recordInvoice:success"]);
    expect(body.toolResults[0]?.data).toMatchObject({ jurisdiction: "BD", taxAmount: { amount: "30.00" } });
    expect(await ledger.list("tenant_bd_01")).toHaveLength(1);
  });

  it("replay-idempotency-key.json, first invocation: 200 completed", async () => {
    const { code, out } = batched("events/replay-idempotency-key.json");
    expect([code, out.status]).toEqual([0, 200]);
    expect((JSON.parse(out.body) as RunBody).status).toBe("completed");
  });
});

// events/continue-conversation.json continues a run (previousRunId). Alone, the run it names
// is not in this table: 404. After a first run of the same user, with that run's id put in: 200.
describe("npm run invoke on a continuation", SLOW, () => {
  it("continue-conversation.json alone: 404 NOT_FOUND (no such run to continue), exit 1, nothing written", async () => {
    const { code, out } = batched(CONVERSATION_EVENT);
    expect([code, out.status]).toEqual([1, 404]);
    expect(JSON.parse(out.body)).toMatchObject({
      code: "NOT_FOUND",
      detail: "There is no run run_5f0c1e2a-7b3d-4c8e-9a1f-2d6b8e4c0a17 to continue.",
    });
    expect(await ledger.list("tenant_conv_01")).toHaveLength(0);
  });

  it("continue-conversation.json after a first run: 200, 'now record it' records the first run's quote", async () => {
    // The first run was invoked in the succeeding batch.
    const first = batched(conversationStart);
    expect([first.code, first.out.status]).toEqual([0, 200]);
    const firstBody = JSON.parse(first.out.body) as RunBody;
    expect(summary(firstBody)).toEqual(["calculateTax:success"]);
    const quoteId = String((firstBody.toolResults[0]?.data as { quoteId?: unknown } | undefined)?.quoteId);
    // The continuation, with the first run's id put in, in a process after the batches (see `later`).
    const second = (await later()).get(conversationNext) as Invoked;
    expect([second.code, second.out.status]).toEqual([0, 200]);
    const secondBody = JSON.parse(second.out.body) as RunBody & { previousRunId: string };
    expect(secondBody.previousRunId).toBe(firstBody.runId);
    expect(summary(secondBody)).toEqual(["recordInvoice:success"]);
    const rows = await ledger.list("tenant_conv_01");
    expect(rows.map((row) => [row.quoteId, row.taxAmount.amount])).toEqual([[quoteId, "50.00"]]);
  });
});

// Identity from REST v1 authorizer claims and from a function URL's IAM authorizer. An IAM principal
// maps to a tenant only through IAM_PRINCIPAL_TENANTS: events/function-url.env.json holds the mapping.
describe("npm run invoke on the REST v1 and function URL shapes", SLOW, () => {
  it("rest-v1.json: 200 completed, one invoice for the REST caller's tenant", async () => {
    const { code, out } = batched("events/rest-v1.json");
    expect([code, out.status]).toEqual([0, 200]);
    expect(out.headers["content-type"]).toMatch(/^application\/json/);
    const body = JSON.parse(out.body) as RunBody;
    expect(body.status).toBe("completed");
    expect(await ledger.list("tenant_rest_01")).toHaveLength(1);
  });

  it("function-url.json alone: 200 completed, its function-url.env.json read without --env-vars", async () => {
    const { code, out, stderr } = await invoke(["events/function-url.json"]);
    expect([code, out.status]).toEqual([0, 200]);
    expect((JSON.parse(out.body) as RunBody).status).toBe("completed");
    expect(stderr).toContain("env: 1 variable(s) from events/function-url.env.json");
  });

  it("function-url.json without the principal mapping (no .env.json next to it): 401 UNAUTHENTICATED, exit 1", async () => {
    const { code, out, stderr } = batched(unmappedFunctionUrl);
    expect([code, out.status]).toEqual([1, 401]);
    expect(JSON.parse(out.body)).toMatchObject({ code: "UNAUTHENTICATED" });
    expect(stderr).not.toContain("env:");
  });
});

// The Lambda edge: an HTTP API's named stage in rawPath, and a body that is not the base64
// its isBase64Encoded flag claims.
describe("npm run invoke on the edge samples", SLOW, () => {
  it("named-stage.json (stage dev, rawPath /dev/v1/runs): 200 completed, one invoice recorded", async () => {
    const { code, out } = batched("events/named-stage.json");
    expect([code, out.status]).toEqual([0, 200]);
    const body = JSON.parse(out.body) as RunBody;
    expect(body.status).toBe("completed");
    expect(summary(body)).toEqual(["calculateTax:success", "recordInvoice:success"]);
    const rows = await ledger.list("tenant_stage_01");
    expect(rows.map((row) => `${row.runId} ${row.grossTotal.amount}`)).toEqual([`${body.runId} 300.00`]);
  });

  it("base64url-body.json: 400 problem+json INVALID_REQUEST, exit status 1, no model call, nothing recorded", async () => {
    const { code, out } = batched("events/base64url-body.json");
    expect([code, out.status]).toEqual([1, 400]);
    expect(out.headers["content-type"]).toBe("application/problem+json");
    expect(JSON.parse(out.body)).toMatchObject({ code: "INVALID_REQUEST", errors: [{ in: "body" }] });
    // Invoked in one process with the other refused events, on a model server of their own: none of
    // them made a model call.
    expect(refusedModel.requests).toHaveLength(0);
    expect(await ledger.list("tenant_b64url_01")).toEqual([]);
  });
});

// The same key twice in one command, on the DynamoDB Local that command starts: test/local-processes.test.ts.
describe("npm run invoke replays with Idempotency-Key", () => {
  it(
    "replay-idempotency-key.json twice: the second answer is the first, with Idempotent-Replayed: true",
    SLOW,
    async () => {
      // The file's table, where the batch made the first invocation with this key: a later process is the second.
      const first = batched(REPLAY);
      const second = (await later()).get(REPLAY) as Invoked;
      expect(first.out.status).toBe(200);
      expect(second.out.status).toBe(200);
      expect(second.out.headers["idempotent-replayed"]).toBe("true");
      expect(JSON.parse(second.out.body)).toEqual(JSON.parse(first.out.body));
    },
  );
});

describe("npm run invoke options", SLOW, () => {
  it("--env-vars (SAM's shape) reaches the handler: MAX_CYCLES 1 ends the run after one cycle", async () => {
    const dir = mkdtempSync(join(tmpdir(), "boundloop-env-"));
    const file = join(dir, "env.json");
    writeFileSync(file, JSON.stringify({ Parameters: { MAX_CYCLES: 3 }, ApiFunction: { MAX_CYCLES: 1 } }));
    const { code, out, stderr } = await invoke(["events/de-only.json", "--env-vars", file]);
    expect([code, out.status]).toEqual([0, 200]);
    const body = JSON.parse(out.body) as RunBody;
    expect(body.status).toBe("max_cycles_exceeded");
    expect(body.cycles).toBe(1);
    expect(stderr).toContain(`env: 1 variable(s) from ${file}`);
  });

  it("--timeout sets the context's remaining time: a 5 s function ends a slow model's run deadline_exceeded", async () => {
    // Its own model server, scripted to answer after 20 s: with the deployed 29 s timeout the run would
    // wait for that answer and complete; a 5 s function has at most a 3.5 s deadline (5000 ms − 1500 ms
    // reserve, less what the first request spends loading the app and its dependencies under tsx).
    const slow = await startModelServer({ script: [{ delayMs: 20_000, content: "too late" }] });
    try {
      const { code, out, stderr } = await invoke(["events/de-only.json", "--timeout", "5"], {
        OPENAI_BASE_URL: slow.baseURL,
      });
      expect([code, out.status]).toEqual([0, 200]);
      expect((JSON.parse(out.body) as RunBody).status).toBe("deadline_exceeded");
      expect(stderr).toContain("(timeout 5 s)");
      expect(slow.requests).toHaveLength(1);
    } finally {
      await slow.stop();
    }
  });

  it("without --timeout the function timeout follows RUN_TIMEOUT_MS, and says a deployed run would be capped", async () => {
    const { code, out, stderr } = await invoke(["events/de-only.json"], { RUN_TIMEOUT_MS: "45000" });
    expect([code, out.status]).toEqual([0, 200]);
    expect(stderr).toContain("(timeout 46.5 s)");
    expect(stderr).toContain("invoke: RUN_TIMEOUT_MS 45000 ms: this local run gives the function 46.5 s.");
    const capped = await invoke(["events/de-only.json", "--timeout", "10"], { RUN_TIMEOUT_MS: "45000" });
    expect(capped.stderr).toContain("(timeout 10 s)");
    expect(capped.stderr).toContain(
      "RUN_TIMEOUT_MS 45000 ms is capped by the function timeout (--timeout 10 s): a run ends within 8500 ms",
    );
  });

  it("exits 2 when the invocation fails: an invalid configuration names the variable", async () => {
    const dir = mkdtempSync(join(tmpdir(), "boundloop-env-"));
    const file = join(dir, ".env");
    writeFileSync(file, "MAX_CYCLES=0\nNOT_A_BOUNDLOOP_VARIABLE=1\n");
    const { code, stdout, stderr } = await runScript(
      "tsx",
      ["local/invoke.ts", "events/seed-scenario.json", "--env-vars", file],
      env,
    );
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toContain("boundloop reads none of NOT_A_BOUNDLOOP_VARIABLE");
    expect(stderr).toMatch(/Invalid configuration: MAX_CYCLES/);
  });

  it("exits 2 on a missing event file, with usage on bad arguments", async () => {
    const missing = await runScript("tsx", ["local/invoke.ts", "events/no-such-event.json"], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("no-such-event.json");
    const usage = await runScript(
      "tsx",
      ["local/invoke.ts", "--timeout", "0", "events/seed-scenario.json"],
      env,
    );
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("usage: npm run invoke");
  });
});
