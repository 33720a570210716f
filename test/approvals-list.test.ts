/**
 * The approvals listings of the store on the listing index (shared/store/table.ts LIST_INDEX): each
 * approval is one item whose one conditional write also moves it between its tenant's lists, and both
 * lists are exact index queries (full pages, their own order, tenant- and list-bound cursors). Runs on
 * DynamoDB Local and, in `npm run test:dynalite`, on dynalite.
 */
import { randomUUID } from "node:crypto";
import { CreateTableCommand } from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refusedByDecision } from "../shared/agent/approval.js";
import { approvalOutcomeOf } from "../shared/runs/approval-service.js";
import type { ApprovalRecord } from "../shared/store/approval-record.js";
import { ApprovalStore } from "../shared/store/approvals.js";
import { InvalidCursorError } from "../shared/store/errors.js";
import { keys } from "../shared/store/keys.js";
import { encodeCursor } from "../shared/store/query.js";
import { ensureTable, LIST_INDEX, listKey, TABLE_SCHEMA, tableKey } from "../shared/store/table.js";
import { freshTable } from "./support/idempotency.js";

/** Retention after expiry (s) of the store under test. */
const TTL_SECONDS = 3_600;
let ddb: DynamoDBDocumentClient;
let tableName: string;
let store: ApprovalStore;
/** The table commands sent, by name (`UpdateItemCommand`, …), recorded while `recording` is set. */
const sent: string[] = [];
let recording = false;

beforeAll(async () => {
  ({ ddb, tableName } = await freshTable());
  store = new ApprovalStore(ddb, tableName, TTL_SECONDS);
  ddb.middlewareStack.add(
    (next, context) => async (args) => {
      if (recording) sent.push(String(context.commandName));
      return next(args);
    },
    { step: "initialize", name: "recordCommands" },
  );
});
afterAll(() => {
  ddb?.destroy();
});

const T0 = Date.parse("2026-03-01T09:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();

/** Requests approval `index` of run `runId`, asked at `requestedAt` (epoch ms), expiring an hour later. */
const ask = (tenantId: string, runId: string, index: number, requestedAt: number) =>
  store.request({
    approvalId: `apr_${String(index).padStart(32, "0")}`,
    runId,
    tenantId,
    toolName: "recordInvoice",
    toolCallId: `call_${index}`,
    arguments: { amount: index },
    preview: { grossTotal: `${index}.00`, currency: "GBP" },
    requestedBy: "usr_owner",
    requestedAt: iso(requestedAt),
    expiresAt: iso(requestedAt + 3_600_000),
    callbackId: `cb_${index}`,
    waitName: `cycle-1:approval:call_${index}`,
  });

/** Every item of the tenant's partition, read from the table itself (not the index). */
async function partitionOf(tenantId: string): Promise<Array<Record<string, unknown>>> {
  const page = await ddb.send(
    new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: "#p = :p",
      ExpressionAttributeNames: { "#p": TABLE_SCHEMA.partitionKey },
      ExpressionAttributeValues: { ":p": keys.tenant(tenantId) },
      ConsistentRead: true,
    }),
  );
  return page.Items ?? [];
}

/** Reads every page of a listing at `limit`, returning each page's size and the approvals in order. */
async function walk(
  list: (options: { limit: number; cursor?: string }) => Promise<{
    approvals: ApprovalRecord[];
    nextCursor: string | undefined;
  }>,
  limit: number,
): Promise<{ sizes: number[]; approvals: ApprovalRecord[] }> {
  const sizes: number[] = [];
  const approvals: ApprovalRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await list({ limit, ...(cursor === undefined ? {} : { cursor }) });
    sizes.push(page.approvals.length);
    approvals.push(...page.approvals);
    cursor = page.nextCursor;
  } while (cursor !== undefined && sizes.length < 100);
  return { sizes, approvals };
}

describe("an approval is one item, listed by the one write that sets its state", () => {
  it("requested: in the pending list, oldest first; each transition is one UpdateItem that moves it to the decided list, newest first", async () => {
    const tenantId = "tenant_list_one";
    // Run ids sort the other way round from the request times.
    const oldest = await ask(tenantId, "run_c", 1, T0);
    const middle = await ask(tenantId, "run_b", 2, T0 + 1_000);
    const newest = await ask(tenantId, "run_a", 3, T0 + 2_000);
    const pending = await store.listPending(tenantId, { limit: 10 }, T0 + 3_000);
    expect(pending).toEqual({ approvals: [oldest, middle, newest], nextCursor: undefined });
    expect((await store.listDecided(tenantId, { limit: 10 }, T0 + 3_000)).approvals).toEqual([]);

    recording = true;
    sent.length = 0;
    const approved = await store.decide(
      tenantId,
      "run_b",
      middle.approvalId,
      { status: "approved", decidedBy: "usr_approver", reason: "PO 4711" },
      T0 + 10_000,
    );
    expect(sent).toEqual(["UpdateItemCommand"]);
    sent.length = 0;
    const expired = await store.expire(tenantId, "run_c", oldest.approvalId, T0 + 20_000);
    expect(sent).toEqual(["UpdateItemCommand"]);
    sent.length = 0;
    const cancelled = await store.cancelPending(tenantId, "run_a", T0 + 30_000);
    // The run's pending approvals (a consistent table query), then one update each.
    expect(sent).toEqual(["QueryCommand", "UpdateItemCommand"]);
    recording = false;

    expect(approved).toMatchObject({
      kind: "decided",
      approval: { status: "approved", decidedBy: "usr_approver", decidedAt: iso(T0 + 10_000) },
    });
    expect(expired).toMatchObject({ status: "expired", decidedBy: null, decidedAt: iso(T0 + 20_000) });
    expect(cancelled.map((approval) => [approval.approvalId, approval.status])).toEqual([
      [newest.approvalId, "cancelled"],
    ]);
    const now = T0 + 40_000;
    expect((await store.listPending(tenantId, { limit: 10 }, now)).approvals).toEqual([]);
    const decided = await store.listDecided(tenantId, { limit: 10 }, now);
    expect(decided.nextCursor).toBeUndefined();
    expect(decided.approvals.map((a) => [a.approvalId, a.status, a.decidedBy, a.reason])).toEqual([
      [newest.approvalId, "cancelled", null, null],
      [oldest.approvalId, "expired", null, null],
      [middle.approvalId, "approved", "usr_approver", "PO 4711"],
    ]);
    // Listed exactly as stored and returned by the write, nothing server-side shown.
    expect(decided.approvals[2]).toEqual(approved.kind === "decided" ? approved.approval : undefined);
    expect(JSON.stringify(decided)).not.toMatch(/callback|waitName|expiresAtMs|listPk|listSk/);

    // One item per approval: the approvals themselves, now keyed into the decided list.
    const items = await partitionOf(tenantId);
    expect(items.map((item) => [item[TABLE_SCHEMA.sortKey], item.type])).toEqual([
      [keys.approval("run_a", newest.approvalId), "approval"],
      [keys.approval("run_b", middle.approvalId), "approval"],
      [keys.approval("run_c", oldest.approvalId), "approval"],
    ]);
    const decidedList = keys.approvalList("decided");
    expect(items.map((item) => [item[LIST_INDEX.partitionKey], item[LIST_INDEX.sortKey]])).toEqual([
      Object.values(listKey(tenantId, decidedList, `${iso(T0 + 30_000)}#run_a#${newest.approvalId}`)),
      Object.values(listKey(tenantId, decidedList, `${iso(T0 + 10_000)}#run_b#${middle.approvalId}`)),
      Object.values(listKey(tenantId, decidedList, `${iso(T0 + 20_000)}#run_c#${oldest.approvalId}`)),
    ]);
  });

  it("a decision that loses writes nothing: the approval stays where the winner listed it", async () => {
    const tenantId = "tenant_list_conflict";
    const asked = await ask(tenantId, "run_x", 1, T0);
    const first = await store.decide(
      tenantId,
      "run_x",
      asked.approvalId,
      { status: "rejected", decidedBy: "usr_a", reason: "no" },
      T0 + 1_000,
    );
    const before = await partitionOf(tenantId);
    const second = await store.decide(
      tenantId,
      "run_x",
      asked.approvalId,
      { status: "approved", decidedBy: "usr_b", reason: null },
      T0 + 2_000,
    );
    const late = await store.expire(tenantId, "run_x", asked.approvalId, T0 + 3_000);
    expect(second.kind).toBe("conflict");
    expect(late?.status).toBe("rejected");
    expect(await partitionOf(tenantId)).toEqual(before);
    const decided = await store.listDecided(tenantId, { limit: 5 }, T0 + 4_000);
    expect(decided.approvals).toEqual([first.kind === "decided" ? first.approval : undefined]);
  });
  it("an item that is not an approval is refused when read, not shown or decided on", async () => {
    const tenantId = "tenant_list_malformed";
    const asked = await ask(tenantId, "run_m", 1, T0);
    expect((await store.get(tenantId, "run_m", asked.approvalId))?.approval.status).toBe("pending");
    await ddb.send(
      new UpdateCommand({
        TableName: tableName,
        Key: tableKey(tenantId, keys.approval("run_m", asked.approvalId)),
        UpdateExpression: "SET #status = :status",
        ExpressionAttributeNames: { "#status": "status" },
        ExpressionAttributeValues: { ":status": "maybe" },
      }),
    );
    await expect(store.get(tenantId, "run_m", asked.approvalId)).rejects.toThrow(/status/);
    await expect(store.listPending(tenantId, { limit: 5 }, T0)).rejects.toThrow(/status/);
  });
});

describe("pages", () => {
  const tenantId = "tenant_list_many";
  const now = T0 + 1_000_000;
  beforeAll(async () => {
    // 45 approvals requested a second apart under run ids in reverse order; every third stays pending,
    // the others are decided in the reverse order of their requests (the oldest request decided last).
    for (let index = 0; index < 45; index++) {
      const runId = `run_${String(99 - index).padStart(3, "0")}`;
      await ask(tenantId, runId, index, T0 + index * 1_000);
      if (index % 3 !== 0) {
        await store.decide(
          tenantId,
          runId,
          `apr_${String(index).padStart(32, "0")}`,
          { status: "approved", decidedBy: "usr_approver", reason: `r${index}` },
          T0 + 500_000 - index * 1_000,
        );
      }
    }
  });

  it("are full unless last, pending oldest request first, decided newest decision first", async () => {
    const pending = await walk((options) => store.listPending(tenantId, options, now), 4);
    expect(pending.sizes).toEqual([4, 4, 4, 3]);
    expect(pending.approvals.map((a) => a.toolCallId)).toEqual(
      Array.from({ length: 15 }, (_, i) => `call_${i * 3}`),
    );
    const decided = await walk((options) => store.listDecided(tenantId, options, now), 7);
    expect(decided.sizes).toEqual([7, 7, 7, 7, 2]);
    const decidedIndexes = Array.from({ length: 45 }, (_, i) => i).filter((i) => i % 3 !== 0);
    expect(decided.approvals.map((a) => a.toolCallId)).toEqual(decidedIndexes.map((i) => `call_${i}`));
    const times = decided.approvals.map((a) => Date.parse(a.decidedAt ?? ""));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    // A page of exactly the remaining items has no cursor.
    expect((await store.listPending(tenantId, { limit: 15 }, now)).nextCursor).toBeUndefined();
    expect((await store.listPending(tenantId, { limit: 14 }, now)).nextCursor).toEqual(expect.any(String));
  });

  it("leave out approvals past their retention (ttl), still full", async () => {
    // Approval i's ttl is (T0 + i s + 1 h) + 1 h: at T0 + 2 h + 10.5 s, approvals 0–10 are past it.
    const later = T0 + 7_200_000 + 10_500;
    const pending = await walk((options) => store.listPending(tenantId, options, later), 2);
    expect(pending.approvals.map((a) => a.toolCallId)).toEqual(
      Array.from({ length: 11 }, (_, i) => `call_${12 + i * 3}`),
    );
    expect(pending.sizes).toEqual([2, 2, 2, 2, 2, 1]);
    const decided = await walk((options) => store.listDecided(tenantId, options, later), 10);
    expect(decided.approvals).toHaveLength(30 - 7);
    expect(decided.sizes).toEqual([10, 10, 3]);
    expect(decided.approvals.every((a) => Number(a.toolCallId.slice(5)) > 10)).toBe(true);
  });

  it("cursors belong to one list of one tenant", async () => {
    const pendingCursor = (await store.listPending(tenantId, { limit: 1 }, now)).nextCursor ?? "";
    const decidedCursor = (await store.listDecided(tenantId, { limit: 1 }, now)).nextCursor ?? "";
    expect([pendingCursor, decidedCursor]).toEqual([expect.any(String), expect.any(String)]);
    const second = await store.listPending(tenantId, { limit: 1, cursor: pendingCursor }, now);
    expect(second.approvals.map((a) => a.toolCallId)).toEqual(["call_3"]);

    const refused = async (list: "pending" | "decided", forTenant: string, cursor: string) => {
      const read = list === "pending" ? store.listPending : store.listDecided;
      await expect(read.call(store, forTenant, { limit: 1, cursor }, now)).rejects.toBeInstanceOf(
        InvalidCursorError,
      );
    };
    await refused("decided", tenantId, pendingCursor);
    await refused("pending", tenantId, decidedCursor);
    await refused("pending", "tenant_list_spy", pendingCursor);
    await refused("decided", "tenant_list_spy", decidedCursor);
    // A table-query cursor (two keys), a forged one naming another tenant's list, malformed ones.
    const tableCursor = encodeCursor(tableKey(tenantId, keys.approval("run_099", "apr_x")));
    const spyList = listKey("tenant_list_spy", keys.approvalList("pending"), "2026#run#apr");
    const forged = encodeCursor({ ...tableKey(tenantId, keys.approval("run_099", "apr_x")), ...spyList });
    const mixed = encodeCursor({
      ...tableKey("tenant_list_spy", "APPROVAL#run#apr"),
      ...listKey(tenantId, keys.approvalList("pending"), "2026#run#apr"),
    });
    const extra = encodeCursor({ ...JSON.parse(Buffer.from(pendingCursor, "base64url").toString()), x: "1" });
    for (const cursor of [tableCursor, forged, mixed, extra, "not a cursor", "e30"]) {
      await refused("pending", tenantId, cursor);
    }
  });
});

describe("the local table", () => {
  it("has the listing index ensureTable declares: it lists what the table holds", async () => {
    const tenantId = "tenant_list_raw";
    const asked = await ask(tenantId, "run_raw", 7, T0);
    const stored = await ddb.send(
      new GetCommand({
        TableName: tableName,
        Key: tableKey(tenantId, keys.approval("run_raw", asked.approvalId)),
      }),
    );
    const listed = await ddb.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: LIST_INDEX.name,
        KeyConditionExpression: "#p = :p",
        ExpressionAttributeNames: { "#p": LIST_INDEX.partitionKey },
        ExpressionAttributeValues: { ":p": keys.listPartition(tenantId, keys.approvalList("pending")) },
      }),
    );
    expect(listed.Items).toEqual([stored.Item]);
    expect(stored.Item?.[LIST_INDEX.sortKey]).toBe(`${iso(T0)}#run_raw#${asked.approvalId}`);
    // ensureTable of an existing table with the index is a no-op.
    await ensureTable(ddb, tableName);
  });

  it("ensureTable refuses a table made before the index, naming it, rather than fail at the first listing", async () => {
    const old = `test-${randomUUID()}`;
    await ddb.send(
      new CreateTableCommand({
        TableName: old,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: [
          { AttributeName: TABLE_SCHEMA.partitionKey, AttributeType: "S" },
          { AttributeName: TABLE_SCHEMA.sortKey, AttributeType: "S" },
        ],
        KeySchema: [
          { AttributeName: TABLE_SCHEMA.partitionKey, KeyType: "HASH" },
          { AttributeName: TABLE_SCHEMA.sortKey, KeyType: "RANGE" },
        ],
      }),
    );
    await expect(ensureTable(ddb, old)).rejects.toThrow(
      `Table ${old} has no index ${LIST_INDEX.name} (it was created before the approvals listing used one): delete the table or set TABLE_NAME to a new one.`,
    );
  });
});

describe("an approval nobody decided, noticed only later (a repeated MCP call collects it)", () => {
  it("expired at its expiresAt, not when the call noticed: the record, the listing and APPROVAL_EXPIRED say so", async () => {
    const tenantId = `tenant_${randomUUID()}`;
    const asked = await ask(tenantId, "mcp_late", 1, T0);
    // Noticed five hours after it expired (the injected clock of approvalOutcomeOf).
    const outcome = await approvalOutcomeOf(store, asked, T0 + 6 * 3_600_000);
    expect(outcome).toMatchObject({
      kind: "decided",
      decision: { decision: "expired", decidedAt: asked.expiresAt },
    });
    expect((await store.get(tenantId, "mcp_late", asked.approvalId))?.approval).toMatchObject({
      status: "expired",
      decidedAt: asked.expiresAt,
    });
    if (outcome.kind !== "decided") return;
    const refused = refusedByDecision(
      { id: "call_1", name: "recordInvoice", arguments: "{}" },
      asked.approvalId,
      outcome.decision,
    );
    expect(refused.error?.message).toBe(
      `Nobody approved this recordInvoice call before its approval expired at ${asked.expiresAt}; it did not run.`,
    );
  });
});
