/**
 * The flush every traced invocation makes before it answers (shared/telemetry/entry.ts) is bounded: a
 * collector that refuses connections or never answers costs an invocation at most the flush bound, not
 * the OTLP exporter's default 10 s of attempts and back-off (which, after a run that used its deadline,
 * would outlive the function's timeout and turn a finished run into a failed invocation).
 */
import { createServer, type Server, type Socket } from "node:net";
import { trace } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FLUSH_TIMEOUT_MS, withTracing } from "../shared/telemetry/entry.js";
import { configureTracing, inSpan, Kind } from "../shared/tracing.js";

let silent: Server;
const sockets: Socket[] = [];
let silentEndpoint = "";
let refusedEndpoint = "";
beforeAll(async () => {
  // Accepts connections and never answers.
  silent = createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  silentEndpoint = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
  // A port nothing listens on: bound, then closed.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  refusedEndpoint = `http://127.0.0.1:${(closed.address() as { port: number }).port}`;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => silent.close(() => resolve()));
  configureTracing({ enabled: false, captureContent: false });
  trace.disable();
});

/** A traced invocation with one span, against `endpoint`: its answer and how long it took (ms). */
async function invokeAgainst(endpoint: string) {
  const handler = withTracing(
    async () => inSpan("boundloop.test", { kind: Kind.INTERNAL }, async () => "answered"),
    {
      tracing: { mode: "otlp", otlpEndpoint: endpoint, captureContent: false },
      observability: { serviceName: "boundloop-test", logLevel: "SILENT", metricsNamespace: "test" },
    },
  );
  const started = performance.now();
  const answer = await handler();
  return { answer, ms: performance.now() - started };
}

describe("a traced invocation whose collector cannot take its spans", () => {
  it("the bound is a second", () => {
    expect(FLUSH_TIMEOUT_MS).toBe(1_000);
  });

  it("answers within the flush bound when the collector refuses connections", async () => {
    const { answer, ms } = await invokeAgainst(refusedEndpoint);
    expect(answer).toBe("answered");
    // The bound plus the SDK's first load on this process; far under the exporter's default 10 s.
    expect(ms).toBeLessThan(FLUSH_TIMEOUT_MS + 2_000);
  });

  it("answers within the flush bound when the collector never answers", async () => {
    const { answer, ms } = await invokeAgainst(silentEndpoint);
    expect(answer).toBe("answered");
    expect(ms).toBeLessThan(FLUSH_TIMEOUT_MS + 1_000);
  });
});
