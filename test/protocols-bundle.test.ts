/**
 * A2A and AG-UI through their official clients against the API function as the stack deploys it: the
 * bundle infra/bundle.ts builds at synth (the same function the stack's local bundling runs: esbuild,
 * chunks, the plugins' replacements), run in a Node process of its own with only Lambda's kind of
 * environment, fed the HTTP API v2 events API Gateway's JWT authorizer produces (local/dev-server.ts)
 * through Hono's Lambda adapter as bundled, on DynamoDB Local. What the bundle wrote is read back with the
 * unbundled stores. test/a2a.test.ts and test/agui.test.ts cover each protocol in depth on the unbundled
 * handler; this file proves the deployed build serves them.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Task, TaskState } from "@a2a-js/sdk";
import { TaskNotCancelableError, TaskNotFoundError } from "@a2a-js/sdk/errors";
import { EventType } from "@ag-ui/client";
import type { Metafile } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApiBundle } from "../infra/bundle.js";
import {
  a2aClientAt,
  a2aMessage,
  aguiAgentAt,
  artifactValues,
  CALLERS,
  eventsOfType,
  listedTaskIds,
  type ProtocolStack,
  runAgui,
  SEED_PROMPT,
  startBundledProtocolStack,
} from "./support/protocols.js";

const outdir = mkdtempSync(join(tmpdir(), "boundloop-protocols-bundle-"));
let metafile: Metafile;
let env: ProtocolStack & { dev: { output(): string } };
beforeAll(async () => {
  const built = await buildApiBundle(outdir);
  metafile = built.metafile;
  env = await startBundledProtocolStack(built.file);
}, 120_000);
afterAll(async () => {
  await env?.stop();
  rmSync(outdir, { recursive: true, force: true });
});

/** The official A2A client of `token`'s caller, from the card the bundle serves. */
const a2aAs = (token: string) => a2aClientAt(env.dev.url, env.fetchAs(token));

/** The metafile's output files a cold start reads: index.mjs and what it imports statically, transitively. */
function coldStartOutputs(): string[] {
  const seen: string[] = [];
  const pending = Object.keys(metafile.outputs).filter((path) => path.endsWith("/index.mjs"));
  while (pending.length > 0) {
    const path = pending.pop() as string;
    if (seen.includes(path)) continue;
    seen.push(path);
    for (const imported of metafile.outputs[path]?.imports ?? []) {
      if (imported.kind === "import-statement") pending.push(imported.path);
    }
  }
  return seen;
}

describe("the protocols in the deployed bundle", () => {
  it("holds both protocols within the 1.2 MB of JavaScript (P4), none of their code read at cold start", () => {
    const code = Object.entries(metafile.outputs).filter(([path]) => !path.endsWith(".map"));
    const total = code.reduce((sum, [, output]) => sum + output.bytes, 0);
    expect(total).toBeLessThan(1_200_000);
    const sourcesOf = (paths: string[]) =>
      paths.flatMap((path) => Object.keys(metafile.outputs[path]?.inputs ?? {}));
    const all = sourcesOf(code.map(([path]) => path));
    const eager = sourcesOf(coldStartOutputs());
    for (const protocol of ["node_modules/@a2a-js/sdk/", "shared/a2a/", "shared/agui/"]) {
      expect(
        all.some((source) => source.includes(protocol)),
        protocol,
      ).toBe(true);
      expect(
        eager.filter((source) => source.includes(protocol)),
        protocol,
      ).toEqual([]);
    }
  });
});

describe("A2A's official client against the bundle", () => {
  it("discovers the card and sends the seed scenario: completed, the backend's 300.00 / 1800.00 as artifacts, one invoice; the same message id again is the same task", async () => {
    const client = await a2aAs(env.tokens.alice);
    const card = await client.getAgentCard();
    expect(card.name).toBe("boundloop");
    expect(card.supportedInterfaces.map((item) => [item.url, item.protocolBinding])).toEqual([
      [`${env.dev.url}/v1/a2a`, "JSONRPC"],
    ]);
    const params = a2aMessage(SEED_PROMPT);
    const task = (await client.sendMessage(params)) as Task;
    expect(task.id).toMatch(/^run_[0-9a-z]+$/);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const [uk, de] = artifactValues(task, "calculateTax");
    expect(uk).toMatchObject({
      status: "success",
      data: {
        taxAmount: { amount: "300.00", currency: "GBP", minorUnits: 30000 },
        grossTotal: { amount: "1800.00", currency: "GBP", minorUnits: 180000 },
      },
    });
    expect(de).toMatchObject({ status: "business_error", error: { code: "UNSUPPORTED_JURISDICTION" } });
    const [recorded] = artifactValues(task, "recordInvoice") as Array<{
      data: { invoice: { invoiceId: string } };
    }>;
    const [answer] = artifactValues(task, "answer") as string[];
    expect(answer).toContain("1800.00");
    const ledger = await env.stack.deps.ledger.list(CALLERS.alice.tenant_id);
    expect(ledger).toMatchObject([
      { invoiceId: recorded?.data.invoice.invoiceId, grossTotal: { amount: "1800.00", minorUnits: 180000 } },
    ]);

    const again = (await client.sendMessage(params)) as Task;
    expect(again.id).toBe(task.id);
    expect(await env.stack.deps.ledger.list(CALLERS.alice.tenant_id)).toHaveLength(1);
    const got = await client.getTask({ id: task.id, tenant: "", historyLength: undefined });
    expect([got.status?.state, got.contextId]).toEqual([TaskState.TASK_STATE_COMPLETED, task.contextId]);
    const ended = await client
      .cancelTask({ id: task.id, tenant: "", metadata: undefined })
      .catch((e: unknown) => e);
    expect(ended).toBeInstanceOf(TaskNotCancelableError);
  });

  it("streams a task: the task first, working updates numbered 1, 2, 3… from run.started to run.finished, the artifact, completed", async () => {
    const client = await a2aAs(env.tokens.alice);
    const kinds: string[] = [];
    const updates: string[] = [];
    const artifacts: unknown[] = [];
    let state: TaskState | undefined;
    for await (const item of client.sendMessageStream(
      a2aMessage("Calculate tax on 250 GBP for a client in the UK."),
    )) {
      kinds.push(item.payload?.$case ?? "?");
      if (item.payload?.$case === "statusUpdate") {
        const update = item.payload.value;
        updates.push(`${update.metadata?.seq}:${update.metadata?.event.type}`);
        state = update.status?.state;
      }
      if (item.payload?.$case === "artifactUpdate") {
        artifacts.push(item.payload.value.artifact?.parts[0]?.content?.value);
      }
    }
    expect(kinds[0]).toBe("task");
    expect(updates[0]).toBe("1:run.started");
    expect(updates.at(-1)).toMatch(/^[0-9]+:run\.finished$/);
    expect(updates.map((update) => Number(update.split(":")[0]))).toEqual(updates.map((_, i) => i + 1));
    expect(artifacts).toContainEqual(
      expect.objectContaining({
        status: "success",
        data: expect.objectContaining({ taxAmount: expect.objectContaining({ amount: "50.00" }) }),
      }),
    );
    expect(state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("isolates tenants and users: another's task is not found, not listed, its context not continued", async () => {
    const alice = await a2aAs(env.tokens.alice);
    const task = (await alice.sendMessage(a2aMessage("What is the UK VAT on 10 GBP?"))) as Task;
    for (const token of [env.tokens.mallory, env.tokens.bob]) {
      const other = await a2aAs(token);
      const missing = await other
        .getTask({ id: task.id, tenant: "", historyLength: undefined })
        .catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(TaskNotFoundError);
      expect((missing as Error).message).toBe(`There is no run ${task.id}.`);
      expect(await listedTaskIds(other, CALLERS.alice.tenant_id)).not.toContain(task.id);
      await expect(other.sendMessage(a2aMessage("Go on", { contextId: task.contextId }))).rejects.toThrow(
        /no conversation/,
      );
    }
    expect(await listedTaskIds(alice)).toContain(task.id);
  });
});

describe("AG-UI's HttpAgent against the bundle", () => {
  it("runs the seed scenario in another tenant: the run's events in AG-UI's order, the backend's 300.00 / 1800.00, the answer, RUN_FINISHED; its one invoice is that tenant's", async () => {
    const agent = aguiAgentAt(`${env.dev.url}/v1/agui`, env.tokens.mallory, SEED_PROMPT);
    const { events, outcome, runId } = await runAgui(agent);
    const call = [EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END];
    expect(events.map((event) => event.type)).toEqual([
      EventType.RUN_STARTED,
      ...[EventType.STEP_STARTED, ...call, ...call, EventType.TOOL_CALL_RESULT, EventType.TOOL_CALL_RESULT],
      ...[EventType.STEP_FINISHED, EventType.STEP_STARTED, ...call, EventType.TOOL_CALL_RESULT],
      ...[EventType.STEP_FINISHED, EventType.STEP_STARTED, EventType.STEP_FINISHED],
      ...[EventType.TEXT_MESSAGE_START, EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_END],
      EventType.RUN_FINISHED,
    ]);
    expect(eventsOfType<{ stepName: string }>(events, EventType.STEP_STARTED).map((e) => e.stepName)).toEqual(
      ["cycle 1", "cycle 2", "cycle 3"],
    );
    expect(
      eventsOfType<{ toolCallName: string }>(events, EventType.TOOL_CALL_START).map((e) => e.toolCallName),
    ).toEqual(["calculateTax", "calculateTax", "recordInvoice"]);
    const results = eventsOfType<{ content: string }>(events, EventType.TOOL_CALL_RESULT).map((event) =>
      JSON.parse(event.content),
    );
    expect(results.map((result) => [result.metadata.toolName, result.status])).toEqual([
      ["calculateTax", "success"],
      ["calculateTax", "business_error"],
      ["recordInvoice", "success"],
    ]);
    expect(results[0].data).toMatchObject({
      taxAmount: { amount: "300.00" },
      grossTotal: { amount: "1800.00" },
    });
    expect(eventsOfType<{ delta: string }>(events, EventType.TEXT_MESSAGE_CONTENT)[0]?.delta).toContain(
      "1800.00",
    );
    expect(outcome.result).toMatchObject({ status: "completed", cycles: 3 });
    const invoiceId = results[2].data.invoice.invoiceId as string;
    expect(await env.stack.deps.ledger.list(CALLERS.mallory.tenant_id)).toMatchObject([
      { invoiceId, grossTotal: { amount: "1800.00" } },
    ]);

    // The same run id again (a retry) is the same run: no second invoice. Another tenant's ledger is untouched.
    const again = await runAgui(
      aguiAgentAt(`${env.dev.url}/v1/agui`, env.tokens.mallory, SEED_PROMPT, agent.threadId),
      runId,
    );
    expect(again.outcome.result).toMatchObject({ runId: (outcome.result as { runId: string }).runId });
    expect(await env.stack.deps.ledger.list(CALLERS.mallory.tenant_id)).toHaveLength(1);
    expect(
      (await env.stack.deps.ledger.list(CALLERS.alice.tenant_id)).map((invoice) => invoice.invoiceId),
    ).not.toContain(invoiceId);
  });

  it("keys runs per caller: alice's run id and thread id reused by another tenant's user start a run of their own", async () => {
    const url = `${env.dev.url}/v1/agui`;
    const threadId = randomUUID();
    const first = await runAgui(aguiAgentAt(url, env.tokens.alice, "What is the UK VAT on 3 GBP?", threadId));
    const firstRun = (first.outcome.result as { runId: string }).runId;
    const other = await runAgui(
      aguiAgentAt(url, env.tokens.mallory, "What is the UK VAT on 3 GBP?", threadId),
      first.runId,
    );
    const otherRun = (other.outcome.result as { runId: string }).runId;
    expect(otherRun).not.toBe(firstRun);
    expect((await env.stack.deps.runs.get(CALLERS.mallory.tenant_id, otherRun))?.run.userId).toBe(
      CALLERS.mallory.sub,
    );
    expect(await env.stack.deps.runs.get(CALLERS.mallory.tenant_id, firstRun)).toBeUndefined();
    expect((await env.stack.deps.runs.get(CALLERS.alice.tenant_id, firstRun))?.run.userId).toBe(
      CALLERS.alice.sub,
    );
  });

  it("refuses input without a user message with problem+json before any stream", async () => {
    const response = await env.fetchAs(env.tokens.alice)(`${env.dev.url}/v1/agui`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ threadId: "t", runId: "r", messages: [], tools: [], context: [] }),
    });
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(await response.json()).toMatchObject({ status: 400 });
  });

  it("the bundle's process logged its runs' metrics and no error", () => {
    // Its EMF metric lines are there, so the capture works and the absence of errors means something.
    expect(env.dev.output()).toContain('"service":"boundloop","status":"completed","Runs":1');
    expect(env.dev.output()).not.toMatch(/"level":"ERROR"|Error:/);
  });
});
