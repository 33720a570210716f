import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { startTracing, type TracingSdk } from "../shared/telemetry/sdk.js";
import { ATTR } from "../shared/tracing.js";

/** Attributes printed beside a span's name (ids, counts, codes: what tells the spans apart). */
const SHOWN = [
  "boundloop.run.status",
  "gen_ai.conversation.id",
  "gen_ai.response.finish_reasons",
  "gen_ai.usage.input_tokens",
  "gen_ai.usage.output_tokens",
  "gen_ai.tool.call.id",
  "boundloop.tool.status",
  "error.type",
  "boundloop.approval.decision",
  "aws.dynamodb.table_names",
];

/** The opt-in content attributes (TRACE_CONTENT), printed under their span when content is captured. */
const CONTENT = [ATTR.inputMessages, ATTR.outputMessages, ATTR.toolArguments, ATTR.toolResult];

/** How much of a content attribute's text the tree prints (TRACING=console prints it whole). */
const CONTENT_CHARS = 300;

/**
 * `npm start -- --trace`: the SDK with an in-memory exporter for this process (shared/telemetry/sdk.ts),
 * and `print()`, which writes every trace recorded so far as a tree: each span's name, duration (ms) and
 * key attributes, children indented in start order; with `captureContent` (TRACE_CONTENT) also each
 * content attribute, one line each under its span, cut after {@link CONTENT_CHARS} characters.
 */
export function startTraceTree(captureContent = false): {
  sdk: TracingSdk;
  print(write?: (line: string) => void): void;
} {
  const exporter = new InMemorySpanExporter();
  const sdk = startTracing({ kind: "exporter", exporter }, "boundloop-local", captureContent);
  return {
    sdk,
    print: (write = console.log) => {
      for (const line of traceTreeLines(exporter.getFinishedSpans(), captureContent)) write(line);
    },
  };
}

/**
 * The lines of {@link startTraceTree}'s print for `spans` (roots: spans whose parent is not among them);
 * `content`: also each span's content attributes, under it.
 */
export function traceTreeLines(spans: readonly ReadableSpan[], content = false): string[] {
  const ids = new Set(spans.map((span) => span.spanContext().spanId));
  const byStart = (a: ReadableSpan, b: ReadableSpan) => ms(a.startTime) - ms(b.startTime);
  const children = new Map<string, ReadableSpan[]>();
  for (const span of spans) {
    const parent = span.parentSpanContext?.spanId;
    if (parent && ids.has(parent)) children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  const lines: string[] = [];
  const walk = (span: ReadableSpan, depth: number) => {
    const shown = SHOWN.flatMap((key) =>
      span.attributes[key] === undefined ? [] : [`${key}=${JSON.stringify(span.attributes[key])}`],
    );
    const duration = `${ms(span.duration).toFixed(1)} ms`;
    lines.push(`${"  ".repeat(depth)}${span.name}  ${duration}${shown.length ? `  ${shown.join(" ")}` : ""}`);
    for (const key of content ? CONTENT : []) {
      const value = span.attributes[key];
      if (value === undefined) continue;
      const text = String(value);
      const cut =
        text.length > CONTENT_CHARS ? `${text.slice(0, CONTENT_CHARS)}… (${text.length} characters)` : text;
      lines.push(`${"  ".repeat(depth + 2)}${key}: ${cut}`);
    }
    for (const child of (children.get(span.spanContext().spanId) ?? []).sort(byStart)) walk(child, depth + 1);
  };
  const roots = spans.filter((span) => !span.parentSpanContext || !ids.has(span.parentSpanContext.spanId));
  for (const root of [...roots].sort(byStart)) {
    lines.push(`trace ${root.spanContext().traceId}`);
    walk(root, 1);
  }
  return lines;
}

const ms = (time: [number, number]) => time[0] * 1000 + time[1] / 1e6;
