import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunPageSchema, RunRecordSchema } from "../functions/api/contract.js";
import { apiEvent, type EventOptions } from "./fixtures/events.js";
import { startTestStack, type TestStack } from "./support/stack.js";

// GET /v1/runs as the console's runs view reads it: newest first; a user's own runs, or the tenant's for
// billing readers (the access rule of GET /v1/runs/{runId}); filtered by user, status, start and run id;
// every run with its prompt's excerpt.

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ PROMPT_EXCERPT_CHARS: "40" });
  stack.model.usePlanner();
});
afterAll(async () => {
  await stack?.stop();
});

const TENANT = "tenant_filters_01";
const WRITER = { sub: "usr_writer", tenant_id: TENANT, scope: "billing:write" };
const OTHER_WRITER = { ...WRITER, sub: "usr_writer_2" };
const READER = { sub: "usr_reader", tenant_id: TENANT, scope: "billing:read" };
const ELSEWHERE = { ...READER, tenant_id: "tenant_filters_02" };

const call = async (options: EventOptions) =>
  (await stack.invoke(apiEvent("http-api-v2", options) as never)) as APIGatewayProxyStructuredResultV2;

async function startRun(claims: Record<string, string>, prompt: string): Promise<string> {
  const response = await call({ claims, body: { prompt } });
  return (JSON.parse(response.body ?? "") as { runId: string }).runId;
}

async function list(claims: Record<string, string>, query = "") {
  const response = await call({ method: "GET", path: `/v1/runs${query}`, claims, body: null });
  return { status: response.statusCode, body: JSON.parse(response.body ?? "") as Record<string, unknown> };
}

const ids = async (claims: Record<string, string>, query = "") => {
  const answer = await list(claims, query);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return RunPageSchema.parse(answer.body).items.map((run) => run.runId);
};

const BDT = "Tax on 200 BDT for a client in Bangladesh, and record the invoice for them please";
const DE = "Tax on 500 EUR for a client in Germany (DE)";

/** A run of the writer's recorded straight in the store (`running`, nothing run), its id. */
async function recordRun(prompt: string, timeoutMs: number): Promise<string> {
  const runId = `run_${crypto.randomUUID()}`;
  await stack.deps.runs.start({
    tenantId: TENANT,
    runId,
    userId: WRITER.sub,
    prompt,
    limits: { maxCycles: 5, timeoutMs },
  });
  return runId;
}

describe("GET /v1/runs for the console", () => {
  const runs: Record<string, string> = {};
  beforeAll(async () => {
    runs.first = await startRun(WRITER, BDT);
    runs.second = await startRun(OTHER_WRITER, DE);
    runs.third = await startRun(WRITER, DE);
    runs.foreign = await startRun({ ...WRITER, tenant_id: "tenant_filters_02" }, DE);
    const cancelled = await recordRun("cancel me", 25_000);
    await stack.deps.runs.cancel(TENANT, cancelled, "cancelled by usr_writer");
    runs.cancelled = cancelled;
  });

  it("lists the caller's own runs newest first, each with its prompt's start (PROMPT_EXCERPT_CHARS)", async () => {
    expect(await ids(WRITER)).toEqual([runs.cancelled, runs.third, runs.first]);
    const page = RunPageSchema.parse((await list(WRITER)).body);
    const first = page.items.find((run) => run.runId === runs.first);
    expect(first?.prompt).toMatchObject({ chars: BDT.length, excerpt: BDT.slice(0, 40) });
    expect(page.items.find((run) => run.runId === runs.third)?.prompt.excerpt).toBe(DE.slice(0, 40));
    expect(first?.answer).toMatch(/BDT/);
  });

  it("a billing reader lists the tenant's runs (scope=tenant), narrowed to a user, and sees their excerpts on GET", async () => {
    expect(await ids(READER, "?scope=tenant")).toEqual([runs.cancelled, runs.third, runs.second, runs.first]);
    expect(await ids(READER, "?scope=tenant&userId=usr_writer_2")).toEqual([runs.second]);
    expect(await ids(READER, "?userId=usr_writer_2")).toEqual([runs.second]);
    // Its own runs (none): the default scope.
    expect(await ids(READER)).toEqual([]);
    const got = await call({ method: "GET", path: `/v1/runs/${runs.second}`, claims: READER, body: null });
    expect(RunRecordSchema.parse(JSON.parse(got.body ?? "")).prompt.excerpt).toBe(DE.slice(0, 40));
    // Another tenant's reader sees its own tenant's run, none of these.
    expect(await ids(ELSEWHERE, "?scope=tenant")).toEqual([runs.foreign]);
  });

  it("without billing:read another user's runs, or the tenant's, are 403 FORBIDDEN; naming yourself is fine", async () => {
    for (const query of ["?scope=tenant", "?userId=usr_writer_2", "?scope=tenant&userId=usr_writer_2"]) {
      const refused = await list(WRITER, query);
      expect(refused.status, query).toBe(403);
      expect(refused.body).toMatchObject({ code: "FORBIDDEN", requiredPermission: "billing:read" });
    }
    expect(await ids(WRITER, "?scope=tenant&userId=usr_writer")).toEqual([
      runs.cancelled,
      runs.third,
      runs.first,
    ]);
  });

  it("filters by status, by start (from inclusive, to exclusive) and by a run id's start", async () => {
    expect(await ids(READER, "?scope=tenant&status=cancelled")).toEqual([runs.cancelled]);
    expect(await ids(READER, "?scope=tenant&status=completed")).toEqual([
      runs.third,
      runs.second,
      runs.first,
    ]);
    expect(await ids(READER, "?scope=tenant&status=running")).toEqual([]);
    // Every status a run record has is a status to filter by, a durable run waiting for budget's too.
    expect(await ids(READER, "?scope=tenant&status=awaiting_quota")).toEqual([]);
    const page = RunPageSchema.parse((await list(READER, "?scope=tenant")).body);
    const startOf = (id: string) => page.items.find((run) => run.runId === id)?.startedAt as string;
    const from = encodeURIComponent(startOf(runs.second as string));
    const to = encodeURIComponent(startOf(runs.cancelled as string));
    expect(await ids(READER, `?scope=tenant&from=${from}`)).toEqual([
      runs.cancelled,
      runs.third,
      runs.second,
    ]);
    expect(await ids(READER, `?scope=tenant&from=${from}&to=${to}`)).toEqual([runs.third, runs.second]);
    expect(await ids(READER, `?scope=tenant&to=${from}`)).toEqual([runs.first]);
    const prefix = (runs.second as string).slice(0, 12);
    expect(await ids(READER, `?scope=tenant&runId=${prefix}`)).toEqual([runs.second]);
    expect(await ids(WRITER, `?runId=${prefix}`)).toEqual([]);
  });

  it("pages through a filtered listing, every run once, each page newest first", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `?scope=tenant&status=completed&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page = RunPageSchema.parse((await list(READER, query)).body);
      seen.push(...page.items.map((run) => run.runId));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual([runs.third, runs.second, runs.first]);
  });

  it("refuses what it cannot read: a bad status, from after to, a foreign cursor", async () => {
    expect((await list(READER, "?scope=tenant&status=paused")).status).toBe(400);
    const bad = await list(READER, "?scope=tenant&from=2026-05-02T00:00:00Z&to=2026-05-01T00:00:00Z");
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("INVALID_REQUEST");
    const first = RunPageSchema.parse((await list(READER, "?scope=tenant&limit=1")).body);
    const foreign = await list(
      ELSEWHERE,
      `?scope=tenant&cursor=${encodeURIComponent(first.nextCursor as string)}`,
    );
    expect(foreign.status).toBe(400);
  });

  it("filters by every record status a run can be in, a durable run waiting for budget included", async () => {
    const waiting = await recordRun("wait for budget", 600_000);
    expect(await stack.deps.runs.setAwaitingQuota(TENANT, waiting, true)).toBe(true);
    expect(await ids(READER, "?scope=tenant&status=awaiting_quota")).toEqual([waiting]);
    expect(await ids(WRITER, "?status=awaiting_quota")).toEqual([waiting]);
    expect(await ids(READER, "?scope=tenant&status=awaiting_approval")).toEqual([]);
  });
});

describe("PROMPT_EXCERPT_CHARS=0", () => {
  it("keeps no excerpt, only the prompt's length and hash", async () => {
    const bare = await startTestStack({ PROMPT_EXCERPT_CHARS: "0" });
    try {
      bare.model.usePlanner();
      const response = (await bare.invoke(
        apiEvent("http-api-v2", { claims: WRITER, body: { prompt: DE } }) as never,
      )) as APIGatewayProxyStructuredResultV2;
      const { runId } = JSON.parse(response.body ?? "") as { runId: string };
      const record = await bare.deps.runs.getRecord(TENANT, runId);
      expect(record?.prompt).toEqual({
        chars: DE.length,
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
    } finally {
      await bare.stop();
    }
  });
});
