/**
 * The trace a durable execution carries in its input. Its own module, apart from shared/tracing.ts, so
 * the cold start's static imports (handler → telemetry entry → tracing) never load zod's classic API
 * (infra/bundle.ts splits it into the chunks requests load; test/support/bundle-contents.ts checks it).
 */
import * as z from "zod";

/**
 * A span context carried in a durable execution's input (W3C trace-context fields): the run's agent
 * span, so every invocation's spans join the same trace under it.
 */
export const CarriedTraceSchema = z
  .object({
    traceId: z.string().regex(/^[0-9a-f]{32}$/),
    spanId: z.string().regex(/^[0-9a-f]{16}$/),
    traceFlags: z.number().int().min(0).max(255),
    /** The span the run's agent span is a child of (the request that started the run), when there is one. */
    parentSpanId: z
      .string()
      .regex(/^[0-9a-f]{16}$/)
      .optional(),
  })
  .strict();
/** See {@link CarriedTraceSchema}. */
export type CarriedTrace = z.infer<typeof CarriedTraceSchema>;
