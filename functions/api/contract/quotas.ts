import { z } from "@hono/zod-openapi";
import { QuotaRefusalSchema as BaseQuotaRefusalSchema } from "../../../shared/agent/outcome-schema.js";
import { CostSchema as BaseCostSchema } from "../../../shared/money/cost.js";
import { LimitsChangeSchema } from "../../../shared/quotas/limits.js";

/**
 * The quotas' part of the HTTP contract (docs/quotas.md): costs, a quota's refusal in a run's details,
 * `GET /v1/usage` and `PUT /v1/limits` bodies, and the RateLimit fields of a 429. The routes themselves
 * are in ./quota-routes.ts; the run schemas of ../contract.ts use the cost and refusal schemas here.
 */

/** A cost: the one cost schema (shared/money/cost.ts), six decimal places in the price table's currency. */
export const CostSchema = BaseCostSchema.extend({
  amount: BaseCostSchema.shape.amount.openapi({ example: "0.012345" }),
  currency: BaseCostSchema.shape.currency.openapi({ example: "USD" }),
}).openapi("Cost", {
  description:
    "A cost from the price table (MODEL_PRICES): each model call's exact cost rounded half-up to six decimal places; a run's is the sum of its calls'.",
});

/**
 * A cost or cost limit as the API shows it (shared/money/micro.ts): `Cost`'s amount, six decimal places
 * whatever form a limit was set in (`"2.5"` is shown `"2.500000"`).
 */
const AmountShown = CostSchema.shape.amount;

/** What a run, step or event says of its cost: the cost, or null without a price for its model. */
export const RunCostFields = {
  cost: CostSchema.nullable().openapi({
    description:
      "The sum of the run's model calls' costs (while it runs, of the calls made so far). A finished run that made no call (a quota stopped it first) costs \"0.000000\" in the price table's currency. Null while a run has made no call yet, and when its model has no price.",
  }),
  costNote: z
    .string()
    .nullable()
    .openapi({ description: "Why `cost` is null: the model that has no price." }),
};

/** `details.quota` of a run that ended `quota_exceeded`: the engine's schema (shared/agent/outcome-schema.ts). */
export const QuotaRefusalSchema = BaseQuotaRefusalSchema.extend({
  limit: BaseQuotaRefusalSchema.shape.limit.openapi({ example: "user.tokensPerDay" }),
}).openapi("QuotaRefusal", {
  description:
    "quota_exceeded: the daily limit that could not cover the next model call (its value, where the total stood with reservations in flight, when the UTC day ends), or QUOTA_UNAVAILABLE when the quota store failed (fail closed).",
});

/** One scope's usage (`ScopeUsage` in shared/quotas/usage.ts). */
const ScopeUsageSchema = z
  .object({
    day: z
      .object({
        start: z.string().openapi({ description: "The UTC day's start (ISO 8601)." }),
        tokens: z
          .object({
            used: z.number().int(),
            reserved: z.number().int().openapi({ description: "Held by model calls in flight." }),
            limit: z.number().int().nullable(),
          })
          .strict(),
        cost: z
          .object({
            used: AmountShown,
            limit: AmountShown.nullable(),
            currency: z
              .string()
              .nullable()
              .openapi({ description: "The price table's; null without prices." }),
          })
          .strict(),
        runs: z.number().int().openapi({ description: "Runs (and MCP tool calls) started today." }),
      })
      .strict(),
    minute: z
      .object({ start: z.string(), runs: z.number().int(), limit: z.number().int().nullable() })
      .strict(),
  })
  .strict();

/** 200 body of `GET /v1/usage` (`UsageView` in shared/quotas/usage.ts). */
export const QuotaUsageSchema = z
  .object({
    user: ScopeUsageSchema,
    tenant: ScopeUsageSchema.extend({
      inFlight: z.object({ runs: z.number().int(), limit: z.number().int().nullable() }).strict(),
    })
      .nullable()
      .openapi({ description: "The tenant's, with `billing:read`; null without it." }),
  })
  .strict()
  .openapi("QuotaUsage", {
    description: "The caller's usage today and this minute, and the tenant's; limits in force.",
  });

/** The limits in force (`QuotaLimits` in shared/config/quotas.ts). */
const LimitsSchema = z
  .object({
    tenant: z
      .object({
        runsPerMinute: z.number().int().nullable(),
        concurrentRuns: z.number().int().nullable(),
        tokensPerDay: z.number().int().nullable(),
        costPerDay: AmountShown.nullable(),
      })
      .strict(),
    user: z
      .object({
        runsPerMinute: z.number().int().nullable(),
        tokensPerDay: z.number().int().nullable(),
        costPerDay: AmountShown.nullable(),
      })
      .strict(),
  })
  .strict();

/**
 * Body of `PUT /v1/limits`: the one schema of a change of a tenant's limits (shared/quotas/limits.ts),
 * its shape in an object made here: the deployed bundle may evaluate the shared module before
 * @hono/zod-openapi extends zod, and a schema made then has no `.openapi` (a TypeError at the app's load).
 */
export const LimitsChangeBody = z
  .object(LimitsChangeSchema.shape)
  .strict()
  .openapi("LimitsChange", {
    description:
      "A change of the tenant's own limits: each field optional (absent: unchanged), null to fall back to the deploy setting. Costs are decimal strings in the price table's currency.",
    example: {
      tenant: { tokensPerDay: 2_000_000, costPerDay: "25.00" },
      user: { runsPerMinute: 10, tokensPerDay: null },
    },
  });

/** 200 body of `PUT /v1/limits`. */
export const LimitsResponseSchema = z
  .object({
    limits: LimitsSchema.openapi({ description: "The limits in force for the tenant now." }),
    tenantSet: z
      .object({ tenant: LimitsSchema.shape.tenant.partial(), user: LimitsSchema.shape.user.partial() })
      .strict()
      .openapi({ description: "What the tenant set itself (the rest comes from the deploy settings)." }),
    updatedBy: z.string().nullable(),
    updatedAt: z.string().nullable(),
  })
  .strict()
  .openapi("Limits");

/** The headers of a 429 RATE_LIMITED. */
export const RateLimitHeaders = z.object({
  "Retry-After": z.number().int().min(1).openapi({
    description: "Seconds until one more run is admitted (the UTC minute's end; 1 for runs in flight).",
  }),
  "RateLimit-Policy": z.string().openapi({
    description:
      'Every admission policy in force (draft-ietf-httpapi-ratelimit-headers), e.g. `"user-minute";q=2;w=60, "tenant-concurrent";q=5;qu="concurrent-requests"`.',
  }),
  RateLimit: z.string().openapi({
    description: 'What is left of each, e.g. `"user-minute";r=0;t=37, "tenant-concurrent";r=3`.',
  }),
});

/** The extension members of a 429 RATE_LIMITED problem. */
export const RateLimitedExtensions = {
  policy: z
    .enum(["user-minute", "tenant-minute", "tenant-concurrent"])
    .optional()
    .openapi({ description: "RATE_LIMITED only: the admission policy that refused the run." }),
  limit: z.number().int().optional().openapi({ description: "RATE_LIMITED only: that policy's limit." }),
  retryAfterSeconds: z
    .number()
    .int()
    .optional()
    .openapi({ description: "RATE_LIMITED only: as `Retry-After`." }),
};
