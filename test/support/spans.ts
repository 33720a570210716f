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
