import type { Config, TracingMode } from "../config.js";
import { onceUntilFailed } from "../lazy.js";
import { configureTracing } from "../tracing.js";
import type { TracingSdk } from "./sdk.js";

/**
 * Whether a function deployed with tracing `mode` exports from inside its own process, and so needs the
 * OpenTelemetry SDK in its bundle: `otlp` and `console` do; `off` never traces and `adot` leaves export
 * to the layer's SDK. The stack builds each function's bundle with the SDK only then (infra/bundle.ts
 * `withoutTracingSdk`), so with tracing off the deployed code holds `@opentelemetry/api` and boundloop's
 * instrumentation but no SDK or exporter.
 */
export function bundlesTracingSdk(mode: TracingMode): boolean {
  return mode === "otlp" || mode === "console";
}

/**
 * The longest an invocation waits for its spans to be sent before it answers (ms), and the OTLP
 * exporter's timeout, its retries included. A collector extension on localhost takes milliseconds; one
 * that refuses connections or does not answer costs an invocation this, not the exporter's default 10 s
 * of attempts (after a run that used its deadline, that would outlive the function's timeout). Spans not
 * sent within it are dropped: traces never change an answer.
 */
export const FLUSH_TIMEOUT_MS = 1_000;

/** `flush()`, given up after {@link FLUSH_TIMEOUT_MS}; never rejects. */
async function boundedFlush(sdk: TracingSdk): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, FLUSH_TIMEOUT_MS);
    timer.unref();
  });
  try {
    await Promise.race([sdk.flush().catch(() => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The SDK this process runs, by its settings: every traced entry of the process with them shares it. */
let running: { key: string; load: () => Promise<TracingSdk> } | undefined;

/**
 * The process's SDK for the settings `key`, started by `start` on first use. Entries in one process (`npm
 * run dev` serves the API and the function URL stand-in) share it: a second SDK would replace the first as
 * the registered provider, and the first entry's flush would then send nothing of its own invocations. One
 * no longer registered (another SDK replaced it, or tracing was disabled) is started again.
 */
async function processSdk(key: string, start: () => Promise<TracingSdk>): Promise<TracingSdk> {
  if (running?.key !== key) running = { key, load: onceUntilFailed(start) };
  const sdk = await running.load();
  if (sdk.registered()) return sdk;
  running = { key, load: onceUntilFailed(start) };
  return running.load();
}

/**
 * Wraps a Lambda entry point's handler with the tracing `config.tracing` asks for (TRACING):
 * - `off`: the handler itself, unchanged; no SDK code is loaded, so the bundle's entry chunk and the
 *   cold start are what they are without tracing (the SDK is a chunk of its own, infra/bundle.ts)
 * - `adot`: an ADOT Lambda layer registered its SDK before the handler loaded (AWS_LAMBDA_EXEC_WRAPPER)
 *   and flushes it itself; boundloop's spans are switched on and go to it
 * - `otlp`, `console`: the in-bundle SDK (shared/telemetry/sdk.ts) is loaded on the first invocation,
 *   and every invocation flushes it before it returns (Lambda freezes the process once the handler has
 *   answered, so a span left in a batch could be lost or sent minutes late), for at most
 *   {@link FLUSH_TIMEOUT_MS}. Traces never change an answer: a failed or late flush is ignored, and a
 *   failed SDK load is logged at ERROR, runs that invocation untraced and is retried by the next one
 *   (shared/lazy.ts `onceUntilFailed`). A bundle built with tracing off has no SDK
 *   ({@link bundlesTracingSdk}): switching TRACING on by hand in the function's environment logs that
 *   error on every invocation; redeploy with the setting instead.
 */
export function withTracing<A extends unknown[], R>(
  handler: (...args: A) => Promise<R>,
  config: Pick<Config, "tracing" | "observability">,
): (...args: A) => Promise<R> {
  const { mode, otlpEndpoint, captureContent } = config.tracing;
  if (mode === "off") return handler;
  if (!bundlesTracingSdk(mode)) {
    configureTracing({ enabled: true, captureContent });
    return handler;
  }
  const loadSdk = () =>
    processSdk(
      JSON.stringify([mode, otlpEndpoint, config.observability.serviceName, captureContent]),
      async () => {
        const { startTracing } = await import("./sdk.js");
        return startTracing(
          mode === "otlp"
            ? { kind: "otlp", endpoint: otlpEndpoint, timeoutMs: FLUSH_TIMEOUT_MS }
            : { kind: "console" },
          config.observability.serviceName,
          captureContent,
        );
      },
    );
  const loadLogger = onceUntilFailed(async () =>
    (await import("../observability.js")).createLogger(config.observability),
  );
  return async (...args: A) => {
    const started = await loadSdk().catch(async (error: unknown) => {
      // Traces never fail a request, but a missing trace is said once per failed load, at ERROR (e.g. a
      // bundle built without the SDK whose TRACING was switched on by hand).
      const logger = await loadLogger().catch(() => undefined);
      logger?.error("tracing is on but the OpenTelemetry SDK did not start; this invocation is not traced", {
        error: error as Error,
      });
      return undefined;
    });
    try {
      return await handler(...args);
    } finally {
      if (started) await boundedFlush(started);
    }
  };
}
