import { trace } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../functions/api/app.js";
import { createHandler } from "../functions/api/app-handler.js";
import { createStreamHandler } from "../functions/stream/entry.js";
import { createDevIssuer, devAuthSettings, mintToken } from "../local/dev-auth.js";
import { createLambdaContext } from "../local/lambda-context.js";
import { installLambdaStreaming, invokeStreaming } from "../local/lambda-streaming.js";
import { createTokenVerifier } from "../shared/auth/token-verifier.js";
import { withTracing } from "../shared/telemetry/entry.js";
import { configureTracing, tracingOptions } from "../shared/tracing.js";
import { startDurableStack } from "./support/durable.js";
import { type OtlpReceiver, type OtlpRequest, otlpSpans, startOtlpReceiver } from "./support/spans.js";
import { seedEvent, startTestStack, type TestStack } from "./support/stack.js";
import { functionUrlEvent } from "./support/streaming.js";

let receiver: OtlpReceiver;
let stack: TestStack;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
  stack = await startTestStack({ POWERTOOLS_LOG_LEVEL: "SILENT" });
});
afterAll(async () => {
  await stack?.stop();
  await receiver?.stop();
  configureTracing({ enabled: false, captureContent: false });
  trace.disable();
});

describe("export over OTLP/HTTP", () => {
  it("the entry's SDK, loaded on the first invocation, sends the run's spans before the invocation answers", async () => {
    const { endpoint, received } = receiver;
    expect(tracingOptions().enabled).toBe(false);
    const handler = withTracing(createHandler(stack.deps), {
      tracing: { mode: "otlp", otlpEndpoint: endpoint, captureContent: false },
      observability: stack.config.observability,
    });
    const response = await handler(seedEvent() as never, createLambdaContext(29_000));
    expect(tracingOptions().enabled).toBe(true);
    const { runId } = JSON.parse((response as { body: string }).body) as { runId: string };
    // Flushed before the handler returned: nothing to wait for.
    expect(received.length).toBeGreaterThan(0);
    for (const post of received) {
      expect(post.url).toBe("/v1/traces");
      expect(post.headers["content-type"]).toBe("application/json");
    }
    const requests = received.map((post) => JSON.parse(post.body) as OtlpRequest);
    const resource = requests[0]?.resourceSpans[0]?.resource.attributes ?? [];
    expect(resource).toContainEqual({ key: "service.name", value: { stringValue: "boundloop" } });
    const spans = requests.flatMap((r) =>
      r.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)),
    );
    const scopes = requests.flatMap((r) =>
      r.resourceSpans.flatMap((rs) => rs.scopeSpans.map((ss) => ss.scope.name)),
    );
    expect(new Set(scopes)).toEqual(new Set(["boundloop"]));
    const attribute = (span: (typeof spans)[number], key: string) =>
      span.attributes.find((a) => a.key === key)?.value;
    const agent = spans.find((span) => span.name === "invoke_agent boundloop");
    expect(agent && attribute(agent, "boundloop.run.id")).toEqual({ stringValue: runId });
    expect(agent && attribute(agent, "boundloop.run.status")).toEqual({ stringValue: "completed" });
    const chats = spans.filter((span) => span.name === "chat gpt-4o-mini");
    expect(chats).toHaveLength(3);
    for (const chat of chats) {
      expect(chat.kind).toBe(3); // SPAN_KIND_CLIENT in OTLP
      expect(chat.traceId).toBe(agent?.traceId);
      expect(chat.parentSpanId).toBe(agent?.spanId);
      expect(attribute(chat, "gen_ai.usage.input_tokens")?.intValue).toBeDefined();
    }
    const failed = spans.find((span) => span.name === "execute_tool calculateTax" && span.status?.code === 2);
    expect(failed && attribute(failed, "error.type")).toEqual({ stringValue: "UNSUPPORTED_JURISDICTION" });
    const puts = spans.filter((span) => span.name === "DynamoDB.PutItem");
    expect(puts.length).toBeGreaterThan(0);
  });
});

describe("two traced entries in one process (npm run dev: the API and the function URL stand-in)", () => {
  it("share one SDK: each invocation's spans are sent before it answers, whichever entry started the SDK", async () => {
    configureTracing({ enabled: false, captureContent: false });
    trace.disable();
    const settings = {
      tracing: { mode: "otlp" as const, otlpEndpoint: receiver.endpoint, captureContent: false },
      observability: stack.config.observability,
    };
    const first = withTracing(createHandler(stack.deps), settings);
    const second = withTracing(createHandler(stack.deps), settings);
    const runIdOf = (response: unknown) =>
      (JSON.parse((response as { body: string }).body) as { runId: string }).runId;
    const sentFor = (runId: string, from: number) =>
      otlpSpans(receiver.received.slice(from)).filter(
        (span) =>
          span.name === "invoke_agent boundloop" &&
          span.attributes.some((a) => a.key === "boundloop.run.id" && a.value.stringValue === runId),
      );
    for (const handler of [first, second, first]) {
      const from = receiver.received.length;
      const runId = runIdOf(await handler(seedEvent() as never, createLambdaContext(29_000)));
      expect(sentFor(runId, from), "the run's agent span, sent before the handler answered").toHaveLength(1);
    }
  });
});

describe("the local durable API (npm run dev, npm start -- --async / --approval)", () => {
  it("traces with TRACING=otlp as the deployed entry does, flushed before it answers", async () => {
    // No SDK registered, as in a fresh `npm run dev` process.
    configureTracing({ enabled: false, captureContent: false });
    trace.disable();
    const durable = await startDurableStack({
      TRACING: "otlp",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    });
    try {
      const response = await durable.invoke(seedEvent());
      const { runId } = JSON.parse(response.body ?? "{}") as { runId: string };
      const spans = otlpSpans(receiver.received);
      const agent = spans.find(
        (span) =>
          span.name === "invoke_agent boundloop" &&
          span.attributes.some((a) => a.key === "boundloop.run.id" && a.value.stringValue === runId),
      );
      expect(agent, "the run's agent span reached the receiver").toBeDefined();
      expect(agent?.status?.code ?? 0).toBe(0);
      const children = spans.filter((span) => agent && span.parentSpanId === agent.spanId);
      expect(children.filter((span) => span.name === "chat gpt-4o-mini")).toHaveLength(3);
    } finally {
      await durable.stop();
    }
  });
});

describe("the streaming function (functions/stream/entry.ts)", () => {
  it("traces a streamed run with TRACING=otlp and flushes before the invocation ends", async () => {
    configureTracing({ enabled: false, captureContent: false });
    trace.disable();
    installLambdaStreaming();
    const issuer = await createDevIssuer();
    const verifier = createTokenVerifier(devAuthSettings(issuer));
    const app = createApp(stack.deps);
    const handler = createStreamHandler(
      (request, env, executionCtx) => app.fetch(request, env, executionCtx as never),
      () => verifier,
      {
        tracing: {
          tracing: { mode: "otlp", otlpEndpoint: receiver.endpoint, captureContent: false },
          observability: stack.config.observability,
        },
      },
    );
    const token = await mintToken(issuer, {
      sub: "usr_stream",
      tenant_id: "tenant_stream_tr",
      scope: "billing:write",
    });
    const event = functionUrlEvent("POST", "/v1/runs", {
      token,
      headers: { accept: "text/event-stream" },
      body: { prompt: JSON.parse(seedEvent().body ?? "{}").prompt },
    });
    const { stream, done } = invokeStreaming(
      handler,
      event,
      createLambdaContext(900_000, "boundloop-stream"),
    );
    stream.resume();
    await done;
    expect((await stream.metadata).statusCode).toBe(200);
    const agents = otlpSpans(receiver.received).filter(
      (span) =>
        span.name === "invoke_agent boundloop" &&
        span.attributes.some(
          (a) => a.key === "boundloop.tenant.id" && a.value.stringValue === "tenant_stream_tr",
        ),
    );
    expect(agents).toHaveLength(1);
  });
});
