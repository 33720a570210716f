import {
  A2AError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors";
import { JsonRpcTransportHandler } from "@a2a-js/sdk/server";
import { describe, expect, it } from "vitest";
import { toA2AError } from "../shared/a2a/errors.js";
import { runErrorOf } from "../shared/agui/errors.js";
import { DOMAIN_ERROR_CODES, DomainError } from "../shared/domain-errors.js";

// Each protocol's edge maps every domain refusal once (docs/a2a.md and docs/ag-ui.md, "Errors"): over the
// whole code list, so a new code is checked here as soon as it exists.

const storeDown = Object.assign(new Error("connect ECONNREFUSED 10.0.0.1:8000 secret-host"), {
  name: "TimeoutError",
  $metadata: {},
});
const bug = new Error("Cannot read properties of undefined (reading 'tenantId') at /var/task/x.js");

describe("domain refusals at the A2A edge", () => {
  it("gives every domain code an A2A error whose ErrorInfo metadata names the code, the facts and when to retry", () => {
    for (const code of DOMAIN_ERROR_CODES) {
      const refusal = new DomainError(code, `Refused: ${code}.`, {
        facts: { runId: "run_1", limit: 3 },
        retryAfterSeconds: 7,
      });
      const mapped = toA2AError(refusal);
      expect(mapped, code).toBeInstanceOf(A2AError);
      const wire = JsonRpcTransportHandler.mapToJSONRPCError(mapped) as unknown as {
        code: number;
        message: string;
        data: Array<{ metadata: Record<string, string> }>;
      };
      expect(wire.message, code).toBe(`Refused: ${code}.`);
      expect(wire.data[0]?.metadata, code).toEqual({
        code,
        runId: "run_1",
        limit: "3",
        retryAfterSeconds: "7",
      });
    }
  });

  it("maps not found, not running and conflicts to the A2A errors a client tells apart", () => {
    const of = (code: (typeof DOMAIN_ERROR_CODES)[number]) => toA2AError(new DomainError(code, "x"));
    expect(of("NOT_FOUND")).toBeInstanceOf(TaskNotFoundError);
    expect(of("RUN_NOT_RUNNING")).toBeInstanceOf(TaskNotCancelableError);
    expect(of("IDEMPOTENCY_KEY_REUSED")).toBeInstanceOf(UnsupportedOperationError);
    expect(of("FORBIDDEN")).toBeInstanceOf(UnsupportedOperationError);
    const rpc = (code: (typeof DOMAIN_ERROR_CODES)[number]) =>
      JsonRpcTransportHandler.mapToJSONRPCError(of(code)).code;
    expect(rpc("INVALID_REQUEST")).toBe(-32602);
    expect(rpc("RATE_LIMITED")).toBe(-32603);
    expect(rpc("QUOTA_UNAVAILABLE")).toBe(-32603);
  });

  it("never sends an unexpected error's text; an unreachable store says so and when to retry", () => {
    const internal = JsonRpcTransportHandler.mapToJSONRPCError(toA2AError(bug)) as unknown as {
      code: number;
      message: string;
      data: Array<{ metadata: Record<string, string> }>;
    };
    expect(internal.code).toBe(-32603);
    expect(internal.message).toBe("The server failed while serving the request.");
    expect(internal.data[0]?.metadata).toEqual({ code: "INTERNAL" });
    const store = toA2AError(storeDown) as A2AError;
    expect(store.message).not.toContain("secret-host");
    expect(store.metadata).toEqual({ code: "STORE_UNAVAILABLE", retryAfterSeconds: "1" });
  });
});

describe("domain refusals at the AG-UI edge", () => {
  it("gives every domain code a RUN_ERROR with the code, the sentence, the facts and when to retry", () => {
    for (const code of DOMAIN_ERROR_CODES) {
      const { event, unexpected } = runErrorOf(
        new DomainError(code, `Refused: ${code}.`, { facts: { runId: "run_1" }, retryAfterSeconds: 2 }),
      );
      expect(unexpected, code).toBe(false);
      expect(event, code).toEqual({
        type: "RUN_ERROR",
        code,
        message: `Refused: ${code}.`,
        rawEvent: { code, facts: { runId: "run_1" }, retryAfterSeconds: 2 },
      });
    }
  });

  it("never sends an unexpected error's text (it is flagged for the log); an unreachable store says so", () => {
    const internal = runErrorOf(bug);
    expect(internal.unexpected).toBe(true);
    expect(internal.event).toMatchObject({ type: "RUN_ERROR", code: "INTERNAL" });
    expect(JSON.stringify(internal.event)).not.toContain("tenantId");
    const store = runErrorOf(storeDown);
    expect(store.event).toMatchObject({ code: "STORE_UNAVAILABLE", rawEvent: { retryAfterSeconds: 1 } });
    expect(JSON.stringify(store.event)).not.toContain("secret-host");
  });
});
