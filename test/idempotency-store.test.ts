import { randomBytes, randomUUID } from "node:crypto";
import { type DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { COMPRESS_ABOVE_BYTES } from "../shared/store/compressed.js";
import { IdempotencyStore, MAX_STORED_RESPONSE_BYTES } from "../shared/store/idempotency.js";
import { keys } from "../shared/store/keys.js";
import { LedgerStore } from "../shared/store/ledger.js";
import { countRequests, freshTable } from "./support/idempotency.js";

const DAY_SECONDS = 86_400;
const ROUTE = "POST /v1/runs";
const USER = "usr_store";
const backend = inject("dynamoBackend");

let ddb: DynamoDBDocumentClient;
let tableName: string;
beforeAll(async () => {
  ({ ddb, tableName } = await freshTable());
});
afterAll(() => {
  ddb?.destroy();
});

/** A store whose clock is shifted by `offsetMs` (the conditions compare with the client's clock). */
const storeAt = (offsetMs = 0) =>
  new IdempotencyStore(ddb, tableName, { ttlSeconds: DAY_SECONDS, now: () => Date.now() + offsetMs });

async function rawRecord(tenantId: string, key: string, route = ROUTE) {
  const result = await ddb.send(
    new GetCommand({
      TableName: tableName,
      Key: { pk: keys.tenant(tenantId), sk: keys.idempotency(route, USER, key) },
      ConsistentRead: true,
    }),
  );
  return result.Item;
}

const request = (key: string, fingerprint = "fp-a", leaseMs = 10_000) => ({
  tenantId: "tenant_store",
  userId: USER,
  route: ROUTE,
  idempotencyKey: key,
  fingerprint,
  leaseExpiresAt: Date.now() + leaseMs,
});

const okResponse = (body: string) => ({ status: 200, headers: { "content-type": "application/json" }, body });

describe("IdempotencyStore", () => {
  it("runs on the backend this suite was asked for (npm run test:dynalite forces dynalite)", () => {
    const forced = process.env.BOUNDLOOP_DYNAMO_BACKEND;
    expect(["dynamodb-local", "dynalite", "external"]).toContain(backend);
    if (forced && backend !== "external") expect(backend).toBe(forced);
  });

  it("acquires, completes fenced on the owner, and replays; the fingerprint is read back from the table", async () => {
    const key = randomUUID();
    const first = await storeAt().acquire(request(key));
    expect(first.kind).toBe("acquired");
    if (first.kind !== "acquired") return;
    expect(first.previousOwner).toBeUndefined();
    expect(await storeAt().complete(first.claim, okResponse('{"runId":"run_1"}'))).toBe("completed");
    // A new store instance (a cold container) has nothing cached: it must read the fingerprint (TS #1499).
    const again = await storeAt().acquire(request(key));
    expect(again.kind).toBe("completed");
    if (again.kind === "completed") {
      expect(again.response).toEqual(okResponse('{"runId":"run_1"}'));
      expect(again.record.fingerprint).toBe("fp-a");
    }
    const raw = await rawRecord("tenant_store", key);
    expect(raw?.status).toBe("COMPLETED");
    expect(raw?.owner).toBe(first.claim.owner);
    expect(raw?.sk).toMatch(/^IDEM#POST \/v1\/runs#[0-9a-f]{64}$/);
  });

  it("answers mismatch for a different fingerprint, even when the failed put returns the record (TS #2058)", async () => {
    const key = randomUUID();
    const first = await storeAt().acquire(request(key, "fp-a"));
    if (first.kind !== "acquired") throw new Error(first.kind);
    // While in progress: mismatch, not "in progress".
    expect((await storeAt().acquire(request(key, "fp-b"))).kind).toBe("mismatch");
    await storeAt().complete(first.claim, okResponse("{}"));
    // Completed: mismatch, not a replay of the other request's response.
    const counter = countRequests(ddb);
    const second = await storeAt().acquire(request(key, "fp-b"));
    expect(second.kind).toBe("mismatch");
    // DynamoDB Local returns the record with the failed put (one request); dynalite does not, and the
    // consistent GetItem fallback runs (two requests).
    counter.stop();
    expect(counter.log).toEqual(backend === "dynalite" ? ["PutItem", "GetItem"] : ["PutItem"]);
  });

  it("20 concurrent acquires: one owner, the rest in progress; rejected duplicates write nothing (TS #5675)", async () => {
    const key = randomUUID();
    const results = await Promise.all(Array.from({ length: 20 }, () => storeAt().acquire(request(key))));
    const owners = results.filter((r) => r.kind === "acquired");
    expect(owners).toHaveLength(1);
    const rest = results.filter((r) => r.kind !== "acquired");
    expect(rest.map((r) => r.kind)).toEqual(Array(19).fill("in_progress"));
    for (const r of rest) if (r.kind === "in_progress") expect(r.retryAfterSeconds).toBeGreaterThanOrEqual(1);

    const holder = owners[0];
    if (holder?.kind !== "acquired") throw new Error("no holder");
    const before = await rawRecord("tenant_store", key);
    expect(before?.owner).toBe(holder.claim.owner);
    // More duplicates, a different request, and a forged claim: none may change or delete the record.
    await storeAt().acquire(request(key));
    await storeAt().acquire(request(key, "fp-other"));
    const forged = { ...holder.claim, owner: "own_forged" };
    expect(await storeAt().complete(forged, okResponse("{}"))).toBe("not_owner");
    expect(await storeAt().release(forged)).toBe(false);
    expect(await rawRecord("tenant_store", key)).toEqual(before);
    // The holder still completes.
    expect(await storeAt().complete(holder.claim, okResponse('{"ok":true}'))).toBe("completed");
  });

  it("writes a lease expiry even with 0 ms remaining (PY #4759)", async () => {
    const key = randomUUID();
    const now = Date.now();
    const result = await storeAt().acquire({ ...request(key), leaseExpiresAt: now });
    expect(result.kind).toBe("acquired");
    const raw = await rawRecord("tenant_store", key);
    expect(raw?.leaseExpiresAt).toBe(now);
  });

  it("stores ttl as integer epoch seconds and the lease in epoch ms, and checks both (JAVA #1281, TS #2298)", async () => {
    const key = randomUUID();
    const before = Date.now();
    const lease = before + 5_000;
    const first = await storeAt().acquire({ ...request(key), leaseExpiresAt: lease });
    if (first.kind !== "acquired") throw new Error(first.kind);
    const raw = await rawRecord("tenant_store", key);
    expect(Number.isInteger(raw?.ttl)).toBe(true);
    expect(raw?.ttl).toBeGreaterThanOrEqual(Math.floor(before / 1000) + DAY_SECONDS);
    expect(raw?.ttl).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + DAY_SECONDS);
    expect(raw?.leaseExpiresAt).toBe(lease);

    // The lease is checked in ms: 4 s later it still holds, 6 s later the holder is presumed crashed.
    const at4s = await storeAt(4_000).acquire(request(key));
    expect(at4s.kind).toBe("in_progress");
    if (at4s.kind === "in_progress") expect(at4s.retryAfterSeconds).toBe(1);
    const at6s = await storeAt(6_000).acquire(request(key));
    expect(at6s.kind).toBe("acquired");
    if (at6s.kind !== "acquired") return;
    expect(at6s.previousOwner).toBe(first.claim.owner);
    expect(at6s.claim.owner).not.toBe(first.claim.owner);
    // The crashed owner's late completion is fenced off; the new owner completes.
    expect(await storeAt().complete(first.claim, okResponse('{"late":true}'))).toBe("not_owner");
    expect(await storeAt().complete(at6s.claim, okResponse('{"new":true}'))).toBe("completed");

    // The ttl is checked in seconds: one second before it the record holds; at it, the record is gone in
    // effect (DynamoDB deletes it later), so even a different request acquires the key.
    const ttlMs = Number((await rawRecord("tenant_store", key))?.ttl) * 1000;
    const offset = ttlMs - Date.now();
    expect((await storeAt(offset - 1_500).acquire(request(key, "fp-other"))).kind).toBe("mismatch");
    const expired = await storeAt(offset + 1).acquire(request(key, "fp-other"));
    expect(expired.kind).toBe("acquired");
    if (expired.kind === "acquired") expect(expired.previousOwner).toBeUndefined();
  });

  it("a takeover needs the same fingerprint: an expired lease does not let another request in", async () => {
    const key = randomUUID();
    await storeAt().acquire({ ...request(key), leaseExpiresAt: Date.now() - 1 });
    expect((await storeAt().acquire(request(key, "fp-b"))).kind).toBe("mismatch");
  });

  it("release is owner-fenced and lets the next request run", async () => {
    const key = randomUUID();
    const first = await storeAt().acquire(request(key));
    if (first.kind !== "acquired") throw new Error(first.kind);
    expect(await storeAt().release(first.claim)).toBe(true);
    expect(await rawRecord("tenant_store", key)).toBeUndefined();
    const second = await storeAt().acquire(request(key));
    expect(second.kind).toBe("acquired");
    if (second.kind !== "acquired") return;
    expect(second.previousOwner).toBeUndefined();
    // The first claim can no longer release (or complete) the second owner's record.
    expect(await storeAt().release(first.claim)).toBe(false);
    await storeAt().complete(second.claim, okResponse("{}"));
    expect(await storeAt().release(second.claim)).toBe(false);
    expect((await rawRecord("tenant_store", key))?.status).toBe("COMPLETED");
  });

  it("stores large responses gzip-compressed, and refuses (writes nothing) over the cap", async () => {
    const small = randomUUID();
    const claimSmall = await storeAt().acquire(request(small));
    if (claimSmall.kind !== "acquired") throw new Error(claimSmall.kind);
    await storeAt().complete(claimSmall.claim, okResponse('{"a":1}'));
    expect((await rawRecord("tenant_store", small))?.response).toMatchObject({ encoding: "identity" });

    // ~1 MB of JSON: over DynamoDB's 400 KB item limit raw, far under it compressed.
    const big = JSON.stringify({
      toolResults: Array.from({ length: 8_000 }, (_, i) => ({
        index: i,
        status: "success",
        note: "x".repeat(90),
      })),
    });
    expect(Buffer.byteLength(big)).toBeGreaterThan(700_000);
    const keyBig = randomUUID();
    const claimBig = await storeAt().acquire(request(keyBig));
    if (claimBig.kind !== "acquired") throw new Error(claimBig.kind);
    expect(await storeAt().complete(claimBig.claim, okResponse(big))).toBe("completed");
    const stored = (await rawRecord("tenant_store", keyBig))?.response as {
      encoding: string;
      body: Uint8Array;
    };
    expect(stored.encoding).toBe("gzip");
    expect(stored.body.byteLength).toBeGreaterThan(COMPRESS_ABOVE_BYTES / 100);
    expect(stored.body.byteLength).toBeLessThan(MAX_STORED_RESPONSE_BYTES);
    const replay = await storeAt().acquire(request(keyBig));
    expect(replay.kind === "completed" && replay.response.body === big).toBe(true);

    // Random base64 hardly compresses: over the cap even gzip-compressed.
    const huge = JSON.stringify({ blob: randomBytes(400_000).toString("base64") });
    const keyHuge = randomUUID();
    const claimHuge = await storeAt().acquire(request(keyHuge));
    if (claimHuge.kind !== "acquired") throw new Error(claimHuge.kind);
    expect(await storeAt().complete(claimHuge.claim, okResponse(huge))).toBe("too_large");
    expect((await rawRecord("tenant_store", keyHuge))?.status).toBe("IN_PROGRESS");
  });

  it("scopes records by tenant, user and route", async () => {
    const key = randomUUID();
    const a = await storeAt().acquire(request(key));
    const b = await storeAt().acquire({ ...request(key), tenantId: "tenant_other" });
    const c = await storeAt().acquire({ ...request(key), route: "POST /v1/other" });
    const d = await storeAt().acquire({ ...request(key), userId: "usr_other" });
    expect([a.kind, b.kind, c.kind, d.kind]).toEqual(["acquired", "acquired", "acquired", "acquired"]);
    expect(await storeAt().read("tenant_store", "usr_other", ROUTE, key)).toMatchObject({
      status: "IN_PROGRESS",
    });
  });
});

describe("LedgerStore.recordOnce on this backend", () => {
  it("returns the first invoice on a duplicate: ALL_OLD on DynamoDB Local, consistent GetItem on dynalite", async () => {
    const ledger = new LedgerStore(ddb, tableName);
    const money = (amount: string, minorUnits: number) => ({ amount, minorUnits, currency: "GBP" });
    const invoice = {
      tenantId: "tenant_ledger",
      clientName: "Acme Ltd",
      jurisdiction: "GB",
      currency: "GBP",
      rate: "0.20",
      subtotal: money("100.00", 10_000),
      taxAmount: money("20.00", 2_000),
      grossTotal: money("120.00", 12_000),
      runId: "run_first",
      createdBy: "usr_1",
      quoteId: "q_ledger_1",
      rateVersion: "GB-VAT-STANDARD-2011-01-04",
      taxPointDate: "2026-11-30",
      clientReference: null,
      description: null,
    };
    const counter = countRequests(ddb);
    const first = await ledger.recordOnce(invoice, "tk_ledger_1");
    expect(counter.log).toEqual(["PutItem"]);
    counter.reset();
    const second = await ledger.recordOnce({ ...invoice, runId: "run_retry" }, "tk_ledger_1");
    counter.stop();
    expect(counter.log).toEqual(backend === "dynalite" ? ["PutItem", "GetItem"] : ["PutItem"]);
    expect(first.created).toBe(true);
    expect(second.created).toBe(false);
    expect(second.invoice).toEqual(first.invoice);
    expect(second.invoice.runId).toBe("run_first");
    expect(await ledger.list("tenant_ledger")).toHaveLength(1);
  });
});
