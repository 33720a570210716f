/**
 * Configuration section: logs, metrics and traces.
 * - TRACING (default off): OpenTelemetry traces of every run (docs/tracing.md). off loads no SDK code;
 *   otlp exports OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT; console prints spans; adot leaves export to
 *   an ADOT Lambda layer (the deploy setting `tracing` sets it).
 * - OTEL_EXPORTER_OTLP_ENDPOINT (default http://127.0.0.1:4318, the OTLP/HTTP port of a local
 *   collector): where TRACING=otlp sends spans (`/v1/traces` is appended), the standard variable's name.
 * - TRACE_CONTENT (default false): puts prompts, answers, tool arguments and results on spans (the GenAI
 *   conventions' opt-in attributes). Off, spans carry names, ids, counts and codes only.
 * - POWERTOOLS_SERVICE_NAME, POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_LOG_LEVEL: Powertools' own names.
 */
import * as z from "zod/mini";
import { boundedName, envBoolean } from "./env.js";
import { configSection, type SectionDocs } from "./section.js";

/** The telemetry section's variables, see the module comment. */
export const telemetryFields = {
  TRACING: z._default(z.enum(["off", "otlp", "console", "adot"]), "off"),
  OTEL_EXPORTER_OTLP_ENDPOINT: z._default(z.url({ protocol: /^https?$/ }), "http://127.0.0.1:4318"),
  TRACE_CONTENT: envBoolean(false),
  POWERTOOLS_SERVICE_NAME: boundedName("boundloop"),
  POWERTOOLS_METRICS_NAMESPACE: boundedName("boundloop"),
  POWERTOOLS_LOG_LEVEL: z.pipe(
    z.pipe(
      z._default(z.string(), "INFO"),
      z.transform((value) => value.trim().toUpperCase()),
    ),
    z.enum(["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "CRITICAL", "SILENT"]),
  ),
};

/** TRACING: where spans go (see the telemetry section's `tracing`). */
export type TracingMode = z.output<typeof telemetryFields.TRACING>;

/** Log levels Powertools Logger accepts (POWERTOOLS_LOG_LEVEL). */
export type ObservabilityLogLevel = z.output<typeof telemetryFields.POWERTOOLS_LOG_LEVEL>;

/**
 * The telemetry section: `observability` (Powertools service name, metrics namespace, log level) and
 * `tracing` (docs/tracing.md): `mode` off, otlp (the in-bundle SDK exporting OTLP/HTTP to `otlpEndpoint`,
 * flushed before each invocation ends), console, or adot (an ADOT Lambda layer's SDK is registered;
 * boundloop only emits spans); `captureContent`, the opt-in prompt, answer and tool argument attributes.
 */
export const telemetrySection = configSection({
  fields: telemetryFields,
  config: (
    env,
  ): {
    observability: { serviceName: string; metricsNamespace: string; logLevel: ObservabilityLogLevel };
    tracing: { mode: TracingMode; otlpEndpoint: string; captureContent: boolean };
  } => ({
    observability: {
      serviceName: env.POWERTOOLS_SERVICE_NAME,
      metricsNamespace: env.POWERTOOLS_METRICS_NAMESPACE,
      logLevel: env.POWERTOOLS_LOG_LEVEL,
    },
    tracing: {
      mode: env.TRACING,
      otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
      captureContent: env.TRACE_CONTENT,
    },
  }),
});

/** The prose of the telemetry section's variables (docs/configuration.md). */
export const telemetryDocs: SectionDocs<typeof telemetryFields> = {
  TRACING: {
    group: "Observability",
    description:
      "OpenTelemetry traces of every run (docs/tracing.md): off (the deployed bundle holds no SDK), otlp (OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT, flushed before each invocation ends), console, or adot (an ADOT Lambda layer you attach exports). Set on AWS by the deploy setting `tracing`, which also decides whether the SDK is bundled: switch it there, not in the function's environment.",
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    group: "Observability",
    description:
      "Base URL TRACING=otlp sends spans to (`/v1/traces` is appended): a collector's OTLP/HTTP port.",
  },
  TRACE_CONTENT: {
    group: "Observability",
    description:
      "Put prompts, answers, tool arguments and results on spans (the GenAI conventions' opt-in content attributes). Never a secret.",
  },
  POWERTOOLS_SERVICE_NAME: { group: "Observability", description: "`service` in every log line and metric." },
  POWERTOOLS_METRICS_NAMESPACE: {
    group: "Observability",
    description: "CloudWatch namespace of the EMF metrics.",
  },
  POWERTOOLS_LOG_LEVEL: {
    group: "Observability",
    description: "Powertools Logger level (case-insensitive).",
  },
};
