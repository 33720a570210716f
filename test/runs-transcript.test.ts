/**
 * Stored transcripts: kept with the run's outcome in one write, gzip-compressed above
 * COMPRESS_ABOVE_BYTES (the same encoding as stored Idempotency-Key responses), and cut by
 * whole turns when still over MAX_STORED_TRANSCRIPT_BYTES compressed, so the run item stays under
 * DynamoDB's 400 KB limit. On DynamoDB Local through RunStore.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { transcriptProblem } from "../local/model-server.js";
import type { HistoryMessage } from "../shared/agent/transcript.js";
import type { AgentRunShapes } from "../shared/runs/run-shapes.js";
import { COMPRESS_ABOVE_BYTES } from "../shared/store/compressed.js";
import { keys } from "../shared/store/keys.js";
import { MAX_STORED_TRANSCRIPT_BYTES, type RunFinish } from "../shared/store/runs.js";
import { tableKey } from "../shared/store/table.js";
import { startTestStack, type TestStack } from "./support/stack.js";

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

const tenantId = `tenant_tr_${randomUUID().slice(0, 8)}`;
const outcome = (transcript: HistoryMessage[]): RunFinish<AgentRunShapes> => ({
  status: "completed",
  cycles: 1,
  answer: "done",
  reason: null,
  usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
  durationMs: 3,
  transcript,
});
/** One conversation turn: a prompt, a tool call with its result of `resultText`, an answer. */
const turn = (n: number, resultText: string): HistoryMessage[] => [
  { role: "user", content: `prompt ${n}` },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: `call_${n}`, type: "function", function: { name: "calculateTax", arguments: "{}" } }],
  },
  { role: "tool", tool_call_id: `call_${n}`, content: resultText },
  { role: "assistant", content: `answer ${n}` },
];

async function stored(runId: string, transcript: HistoryMessage[]) {
  await stack.deps.runs.start({
    tenantId,
    runId,
    userId: "usr_tr",
    prompt: "p",
    limits: { maxCycles: 5, timeoutMs: 1_000 },
  });
  expect(await stack.deps.runs.finish(tenantId, runId, outcome(transcript))).toBe(true);
  const raw = await stack.deps.ddb.send(
    new GetCommand({
      TableName: stack.config.table.name,
      Key: tableKey(tenantId, keys.run(runId)),
    }),
  );
  const read = await stack.deps.runs.readContinuation(tenantId, runId);
  if (read.kind !== "found") throw new Error(`expected found, got ${read.kind}`);
  return { item: raw.Item as Record<string, { encoding: string; body: unknown }>, read };
}

describe("RunStore transcripts", () => {
  it("stores a small transcript as readable text and reads it back", async () => {
    const transcript = turn(1, '{"status":"success"}');
    const { item, read } = await stored(`run_${randomUUID()}`, transcript);
    expect(item.transcript?.encoding).toBe("identity");
    expect(read.transcript).toEqual(transcript);
    expect(read.transcriptDroppedMessages).toBe(0);
    // Never part of the run as the API shows it.
    const shown = await stack.deps.runs.get(tenantId, read.run.runId);
    expect(Object.keys(shown?.run ?? {})).not.toContain("transcript");
  });

  it("gzip-compresses a transcript over COMPRESS_ABOVE_BYTES and reads it back unchanged", async () => {
    const transcript = [...turn(1, "x".repeat(COMPRESS_ABOVE_BYTES)), ...turn(2, "y")];
    const { item, read } = await stored(`run_${randomUUID()}`, transcript);
    expect(item.transcript?.encoding).toBe("gzip");
    expect((item.transcript?.body as Uint8Array | undefined)?.byteLength).toBeLessThan(
      COMPRESS_ABOVE_BYTES / 10,
    );
    expect(read.transcript).toEqual(transcript);
  });

  it("drops the oldest whole turns of a transcript still over MAX_STORED_TRANSCRIPT_BYTES compressed", async () => {
    // Random base64 barely compresses: 10 turns of 48 000 characters are ~360 KB even gzip-compressed.
    const turns = Array.from({ length: 10 }, (_, n) => turn(n, randomBytes(36_000).toString("base64")));
    const transcript = turns.flat();
    const { item, read } = await stored(`run_${randomUUID()}`, transcript);
    expect(item.transcript?.encoding).toBe("gzip");
    expect((item.transcript?.body as Uint8Array | undefined)?.byteLength).toBeLessThanOrEqual(
      MAX_STORED_TRANSCRIPT_BYTES,
    );
    const kept = read.transcript as HistoryMessage[];
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(transcript.length);
    expect(kept).toEqual(transcript.slice(transcript.length - kept.length));
    expect(kept[0]?.role).toBe("user");
    expect(transcriptProblem(kept)).toBeUndefined();
    expect(read.transcriptDroppedMessages).toBe(transcript.length - kept.length);
  });
});
