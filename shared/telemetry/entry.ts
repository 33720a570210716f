import type { Config } from "../config.js";
import { onceUntilFailed } from "../lazy.js";
import { configureTracing } from "../tracing.js";
import type { TracingSdk } from "./sdk.js";

/**
 * Wraps a Lambda entry point's handler with the tracing `config.tracing` asks for (TRACING):
 * - `off`: the handler itself, unchanged; no SDK code is loaded, so the bundle's entry chunk and the
 *   cold start are what they are without tracing (the SDK is a chunk of its own, infra/bundle.ts)
 * - `adot`: an ADOT Lambda layer registered its SDK before the handler loaded (AWS_LAMBDA_EXEC_WRAPPER)
 *   and flushes it itself; boundloop's spans are switched on and go to it
 * - `otlp`, `console`: the in-bundle SDK (shared/telemetry/sdk.ts) is loaded on the first invocation,
 *   and every invocation flushes it before it returns (Lambda freezes the process once the handler has
 *   answered, so a span left in a batch could be lost or sent minutes late). Traces never change an
 *   answer: a failed flush is ignored, and a failed SDK load runs that invocation untraced and is
 *   retried by the next one (shared/lazy.ts `onceUntilFailed`).
 */
export function withTracing<A extends unknown[], R>(
  handler: (...args: A) => Promise<R>,
  config: Pick<Config, "tracing" | "observability">,
): (...args: A) => Promise<R> {
  const { mode, otlpEndpoint, captureContent } = config.tracing;
  if (mode === "off") return handler;
  if (mode === "adot") {
    configureTracing({ enabled: true, captureContent });
    return handler;
  }
  const loadSdk = onceUntilFailed<TracingSdk>(async () => {
    const { startTracing } = await import("./sdk.js");
    return startTracing(
      mode === "otlp" ? { kind: "otlp", endpoint: otlpEndpoint } : { kind: "console" },
      config.observability.serviceName,
      captureContent,
    );
  });
  return async (...args: A) => {
    const started = await loadSdk().catch(() => undefined);
    try {
      return await handler(...args);
    } finally {
      await started?.flush().catch(() => undefined);
    }
  };
}
