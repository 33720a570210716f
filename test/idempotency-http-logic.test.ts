/**
 * withRunIdempotency, the HTTP logic behind POST /v1/runs' Idempotency-Key
 * (functions/api/run-idempotency.ts), called directly over the store on DynamoDB Local: what it stores,
 * replays and releases, and how a store fault answers. Through the handler: idempotency-http.test.ts.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ProblemError, toProblem } from "../functions/api/problem-details.js";
import { RUN_ROUTE, withRunIdempotency } from "../functions/api/run-idempotency.js";
import { IdempotencyStore } from "../shared/store/idempotency.js";
import { injectThrottling } from "./support/reliability.js";
import { testStackForFile } from "./support/stack.js";

const stack = testStackForFile();
const store = () => stack.deps.idempotency;

describe("withRunIdempotency (the HTTP logic)", () => {
  const input = (key: string, body: unknown = { prompt: "p" }) => ({
    deps: stack.deps,
    headers: new Headers({ "Idempotency-Key": key }),
    tenantId: "tenant_logic",
    userId: "usr_idem",
    body,
    leaseExpiresAt: Date.now() + 5_000,
  });

  it("a handler that mutates its input still completes the right key (TS #5715)", async () => {
    const key = `mutate-${randomUUID()}`;
    const request = input(key, { prompt: "original" });
    let runs = 0;
    const response = await withRunIdempotency(request, async () => {
      runs += 1;
      (request.body as { prompt: string }).prompt = "mutated";
      request.headers.set("Idempotency-Key", "another-key");
      request.tenantId = "tenant_other";
      return Response.json({ ok: true });
    });
    expect(response.status).toBe(200);
    expect((await store().read("tenant_logic", "usr_idem", RUN_ROUTE, key))?.status).toBe("COMPLETED");
    expect(await store().read("tenant_logic", "usr_idem", RUN_ROUTE, "another-key")).toBeUndefined();
    expect(await store().read("tenant_other", "usr_idem", RUN_ROUTE, key)).toBeUndefined();
    const again = await withRunIdempotency(input(key, { prompt: "original" }), async () => {
      runs += 1;
      return Response.json({ ok: false });
    });
    expect([again.headers.get("idempotent-replayed"), await again.text(), runs]).toEqual([
      "true",
      '{"ok":true}',
      1,
    ]);
  });

  it("stores a 4xx thrown after execution and replays it; releases on 5xx so a retry runs again", async () => {
    const key = `forbidden-${randomUUID()}`;
    let runs = 0;
    const forbid = async (): Promise<Response> => {
      runs += 1;
      throw new ProblemError("FORBIDDEN", "Not your invoice.", { headers: { "X-Reason": "owner" } });
    };
    await expect(withRunIdempotency(input(key), forbid)).rejects.toMatchObject({ code: "FORBIDDEN" });
    const replay = await withRunIdempotency(input(key), forbid);
    expect(runs).toBe(1);
    expect(replay.status).toBe(403);
    expect(replay.headers.get("content-type")).toBe("application/problem+json");
    expect(replay.headers.get("x-reason")).toBe("owner");
    expect(await replay.json()).toMatchObject({
      status: 403,
      code: "FORBIDDEN",
      detail: "Not your invoice.",
    });

    const flaky = `flaky-${randomUUID()}`;
    const statuses = [502, 200];
    const execute = async () => {
      runs += 1;
      return Response.json({ attempt: runs }, { status: statuses.shift() ?? 500 });
    };
    const first = await withRunIdempotency(input(flaky), execute);
    expect(first.status).toBe(502);
    expect(await store().read("tenant_logic", "usr_idem", RUN_ROUTE, flaky)).toBeUndefined();
    const second = await withRunIdempotency(input(flaky), execute);
    expect([second.status, second.headers.get("idempotent-replayed")]).toEqual([200, null]);
    const third = await withRunIdempotency(input(flaky), execute);
    expect([third.status, third.headers.get("idempotent-replayed"), runs]).toEqual([200, "true", 3]);

    // An unexpected throw releases too.
    const boom = `boom-${randomUUID()}`;
    await expect(
      withRunIdempotency(input(boom), async () => {
        throw new Error("bug");
      }),
    ).rejects.toThrow("bug");
    expect(await store().read("tenant_logic", "usr_idem", RUN_ROUTE, boom)).toBeUndefined();
  });

  it("a store that cannot serve the record is 503 STORE_UNAVAILABLE, a request error 500 INTERNAL; neither runs", async () => {
    let runs = 0;
    const execute = async () => {
      runs += 1;
      return Response.json({});
    };
    // A request error (the table does not exist: ResourceNotFoundException, a client fault) is not the
    // store being unavailable: retrying will not help, so it is no 503.
    const missingTable = new IdempotencyStore(stack.deps.ddb, "no-such-table", { ttlSeconds: 60 });
    const missing = await withRunIdempotency({ ...input("k-missing"), store: missingTable }, execute).catch(
      (error: unknown) => error,
    );
    expect(missing).toMatchObject({ name: "ResourceNotFoundException", $fault: "client" });
    const internal = toProblem(missing);
    expect([internal.code, internal.status, internal.headers["retry-after"]]).toEqual([
      "INTERNAL",
      500,
      undefined,
    ]);

    // Throttled after the SDK's retries: unavailable, 503 with Retry-After.
    const throttle = injectThrottling(stack.deps.ddb, {
      rate: 1,
      seed: 7,
      errorName: "ThrottlingException",
      only: (command) => command === "PutItemCommand",
    });
    try {
      const throttled = await withRunIdempotency(input(`k-throttled-${randomUUID()}`), execute).catch(
        (error: unknown) => error,
      );
      expect(throttled).toMatchObject({ name: "ThrottlingException" });
      const unavailable = toProblem(throttled);
      expect([unavailable.code, unavailable.status, unavailable.headers["retry-after"]]).toEqual([
        "STORE_UNAVAILABLE",
        503,
        "1",
      ]);
      expect(throttle.stats.injected).toBeGreaterThanOrEqual(1);
    } finally {
      throttle.stop();
    }
    expect(runs).toBe(0);
  });
});
