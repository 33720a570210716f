import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { startTracing, type TracingSdk } from "../../shared/telemetry/sdk.js";

/** The SDK with an in-memory exporter (every span as it ends), registered for this test file. */
export function startMemoryTracing(captureContent = false): {
  sdk: TracingSdk;
  exporter: InMemorySpanExporter;
} {
  const exporter = new InMemorySpanExporter();
  return { sdk: startTracing({ kind: "exporter", exporter }, "boundloop-test", captureContent), exporter };
}

/** The spans of the trace of run `runId`'s agent span, which must have ended exactly once. */
export function runTrace(exporter: InMemorySpanExporter, runId: string) {
  const spans = exporter.getFinishedSpans();
  const agents = spans.filter(
    (span) => span.name === "invoke_agent boundloop" && span.attributes["boundloop.run.id"] === runId,
  );
  if (agents.length !== 1) throw new Error(`run ${runId} has ${agents.length} agent spans`);
  const agent = agents[0] as ReadableSpan;
  const inTrace = spans.filter((span) => span.spanContext().traceId === agent.spanContext().traceId);
  const childrenOf = (parent: ReadableSpan) =>
    inTrace.filter((span) => span.parentSpanContext?.spanId === parent.spanContext().spanId);
  return { agent, spans: inTrace, childrenOf };
}

/** A span's name with its children's, recursively: the tree as `name [children]`, children by start. */
export function treeOf(span: ReadableSpan, childrenOf: (span: ReadableSpan) => ReadableSpan[]): unknown {
  const children = childrenOf(span).sort((a, b) => hr(a.startTime) - hr(b.startTime));
  return children.length === 0
    ? span.name
    : { [span.name]: children.map((child) => treeOf(child, childrenOf)) };
}

const hr = (time: [number, number]) => time[0] * 1e9 + time[1];

/** Attribute keys that carry content (prompts, answers, arguments, results): opt-in only. */
export const CONTENT_KEYS = [
  "gen_ai.input.messages",
  "gen_ai.output.messages",
  "gen_ai.system_instructions",
  "gen_ai.tool.call.arguments",
  "gen_ai.tool.call.result",
];

/** The OpenTelemetry packages only an exporting deployment bundles (infra/bundle.ts withoutTracingSdk). */
export const TRACING_SDK_PACKAGES = [
  "node_modules/@opentelemetry/sdk-trace/",
  "node_modules/@opentelemetry/exporter-trace-otlp-http/",
  "node_modules/@opentelemetry/otlp-exporter-base/",
  "node_modules/@opentelemetry/otlp-transformer/",
  "node_modules/@opentelemetry/resources/",
  "node_modules/@opentelemetry/core/",
  "node_modules/@opentelemetry/context-async-hooks/",
];

/** One POST an {@link OtlpReceiver} got. */
export interface OtlpPost {
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A local OTLP/HTTP receiver: answers every POST 200 `{}` and keeps what it got. */
export interface OtlpReceiver {
  /** The base URL to give OTEL_EXPORTER_OTLP_ENDPOINT (`/v1/traces` is appended by the exporter). */
  endpoint: string;
  received: OtlpPost[];
  stop(): Promise<void>;
}

/** Starts an {@link OtlpReceiver} on a free port of 127.0.0.1. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: OtlpPost[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({
        url: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** OTLP/JSON of an ExportTraceServiceRequest, as much of it as the tests read. */
export interface OtlpRequest {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
    scopeSpans: Array<{
      scope: { name: string };
      spans: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes: Array<{ key: string; value: Record<string, unknown> }>;
        status?: { code?: number };
      }>;
    }>;
  }>;
}

/** The spans of every OTLP/JSON request a receiver got, in arrival order. */
export function otlpSpans(received: readonly OtlpPost[]) {
  return received
    .map((post) => JSON.parse(post.body) as OtlpRequest)
    .flatMap((request) => request.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)));
}
