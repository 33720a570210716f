/** The HTTP contract of the runs listing: `GET /v1/runs`, its filters and its page (docs/http-api.md). */

import { createRoute, z } from "@hono/zod-openapi";
import { RecordStatusSchema } from "../../../shared/store/run-record-schema.js";
import { InvoiceListQuery, security } from "./common.js";
import { authErrors, problem } from "./problems.js";
import { RunStatusSchema } from "./run-results.js";
import { RunPageSchema } from "./runs.js";

/**
 * Query of `GET /v1/runs`: whose runs (`scope`, `userId`), which (`status`, `from`/`to` on `startedAt`,
 * a `runId` prefix), and page size and cursor as `GET /v1/invoices`.
 */
export const RunListQuery = z
  .object({
    scope: z
      .enum(["own", "tenant"])
      .default("own")
      .openapi({
        param: { name: "scope", in: "query" },
        description:
          "`own` (default): the caller's runs. `tenant`: every run of the tenant (needs `billing:read`, as seeing another user's run does).",
      }),
    userId: z
      .string()
      .regex(/^[!-~]{1,256}$/)
      .optional()
      .openapi({
        param: { name: "userId", in: "query" },
        description: "Only the runs this user started; another user's need `billing:read`.",
      }),
    status: z
      .union([RecordStatusSchema, RunStatusSchema])
      .optional()
      .openapi({
        param: { name: "status", in: "query" },
        description:
          "Only runs in this status now, as `GET /v1/runs/{runId}` shows it: an `abandoned` run is not `running`.",
      }),
    from: z.iso
      .datetime({ offset: true })
      .optional()
      .openapi({
        param: { name: "from", in: "query" },
        description: "Only runs started at or after this instant (ISO 8601, e.g. `2026-05-01T00:00:00Z`).",
      }),
    to: z.iso
      .datetime({ offset: true })
      .optional()
      .openapi({
        param: { name: "to", in: "query" },
        description: "Only runs started before this instant (ISO 8601; must be after `from`).",
      }),
    runId: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,128}$/)
      .optional()
      .openapi({
        param: { name: "runId", in: "query" },
        description: "Only runs whose id starts with this.",
      }),
    limit: InvoiceListQuery.shape.limit,
    cursor: InvoiceListQuery.shape.cursor,
  })
  .refine((query) => !query.from || !query.to || Date.parse(query.from) < Date.parse(query.to), {
    message: "`to` must be after `from`.",
    path: ["to"],
  });

/** `GET /v1/runs`: the runs the caller may see (its own, or the tenant's with billing:read), newest first. */
export const listRunsRoute = createRoute({
  method: "get",
  path: "/v1/runs",
  summary: "Runs, newest first, a page at a time: the caller's, or the tenant's for billing readers",
  security,
  request: { query: RunListQuery },
  responses: {
    200: {
      description:
        "One page, newest `startedAt` first. A page reads at most 500 runs of the tenant's list, so with filters it may hold fewer than `limit` runs while `nextCursor` is set. The list is eventually consistent on AWS: a run started a moment ago may be missing.",
      content: { "application/json": { schema: RunPageSchema } },
    },
    400: problem("INVALID_REQUEST: bad `limit`, `cursor`, `status`, `from`, `to`, `userId` or `runId`."),
    403: problem("FORBIDDEN: another user's runs, or the tenant's, without `billing:read`."),
    ...authErrors,
  },
});
